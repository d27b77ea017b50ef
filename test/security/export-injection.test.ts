import { afterEach, describe, expect, it } from "vitest";
import type { ItemText } from "@litrev/contracts";
import { exportBody, sampleDownload, type FinishedJob, type JsonRecord } from "@litrev/jobs/client";
import { offlineLink, testGateway } from "../../services/gateway/src/testing";

/**
 * Exports read by other programs, fed with what an attacker controls (imported ids, titles,
 * abstracts; docs/reporting.md): a spreadsheet must find no formula in any cell, the id column
 * included, and a line-oriented RIS reader (Python's `str.splitlines()`) must see no record the
 * job did not have. And the provider-key header is refused at the edge when no key could be that long.
 */

/** A finished screening job with one paper per (id, title, abstract). */
function screeningJob(papers: { id: string; title: string; abstract: string }[]): FinishedJob {
  const items: JsonRecord[] = papers.map((p) => ({ id: p.id, final_score: 2, cluster_id: 0, reasoning: "r", decision: "include", votes: ["include"], criteria_verdicts: [] }));
  const texts: ItemText[] = papers.map((p) => ({ title: p.title, abstract: p.abstract }));
  return {
    record: { job_id: "j", status: "completed", config: { criteria_count: 0, repetitions: 1 }, model_version: "m", created_at: "", completed_at: "", duration_ms: 1, estimated_cost_usd: null, error: null },
    result: {},
    chunks: async function* () {
      yield items;
    },
    titles: async function* () {
      yield texts.map((t) => t.title);
    },
    abstracts: async function* () {
      yield texts.map((t) => t.abstract);
    },
  } as unknown as FinishedJob;
}

async function text(pieces: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const piece of pieces) out += piece;
  return out;
}

/** The cells of an RFC 4180 text (quoted cells unquoted). */
function csvCells(body: string): string[] {
  const cells: string[] = [];
  const re = /(?:^|,)(?:"((?:[^"]|"")*)"|([^,\r\n]*))/gy;
  for (const line of body.replace(/^\uFEFF/, "").split(/\r\n(?=(?:[^"]*"[^"]*")*[^"]*$)/)) {
    if (!line) continue;
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while (re.lastIndex < line.length && (m = re.exec(line))) cells.push(m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2]!);
  }
  return cells;
}

/**
 * What a spreadsheet might take for a formula: after leading white space (LibreOffice and Google
 * Sheets trim it), a formula sign in ASCII or in full width (which some apps fold to ASCII).
 */
const FORMULA = /^[\s\u3000]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\u2212]/;
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/;

const ATTACKS = ["=1+1", "+cmd|' /C calc'!A0", "-2+3+cmd|'/C calc'!A0", "@SUM(A1)", "\t=1", "\r=1", "  =HYPERLINK(\"http://x\")", "\u3000=1", "\uFF1D1+1", "\uFF0Bcmd", "\uFF0D1", "\uFF201"];

/** Python's `str.splitlines()` separators. */
// eslint-disable-next-line no-control-regex -- the separators are the point
const SPLITLINES = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;

describe("exports read by spreadsheets and line-oriented readers", () => {
  it("spreadsheet CSV: no cell can be read as a formula, the id column included; plain numbers stay numbers", async () => {
    const papers = ATTACKS.map((attack, i) => ({ id: attack, title: attack, abstract: `abstract ${i}` }));
    papers.push({ id: "-2", title: "a negative id stays a number", abstract: "" });
    const body = await text(exportBody("screening", screeningJob(papers), "csv", "spreadsheet"));
    const cells = csvCells(body);
    const unsafe = cells.filter((cell) => FORMULA.test(cell) && !PLAIN_NUMBER.test(cell));
    expect(unsafe).toEqual([]);
    expect(cells).toContain("-2");
    // The plain dialect (R, Python) writes values as they are.
    const raw = csvCells(await text(exportBody("screening", screeningJob(papers), "csv", "plain")));
    expect(raw).toContain("=1+1");
  });

  it("the validation sample's spreadsheet CSV guards the id column too", async () => {
    const papers = ATTACKS.map((attack) => ({ id: attack, title: "t", abstract: "a" }));
    const body = await text(sampleDownload(screeningJob(papers), papers.map((p) => p.id), "csv", "spreadsheet"));
    const unsafe = csvCells(body).filter((cell) => FORMULA.test(cell) && !PLAIN_NUMBER.test(cell));
    expect(unsafe).toEqual([]);
  });

  it("RIS: a splitlines() reader sees exactly the job's records, whatever separators the values hold", async () => {
    const forged = (sep: string) => `innocent${sep}ER  - ${sep}TY  - JOUR${sep}TI  - forged`;
    const separators = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"];
    const papers = separators.map((sep, i) => ({ id: `p${i}${sep}x`, title: forged(sep), abstract: forged(sep) }));
    const body = await text(exportBody("screening", screeningJob(papers), "ris"));
    const lines = body.split(SPLITLINES);
    expect(lines.filter((line) => line.startsWith("TY  -"))).toHaveLength(papers.length);
    expect(lines.filter((line) => line.startsWith("ER  -"))).toHaveLength(papers.length);
    expect(lines.filter((line) => line.startsWith("TI  - forged"))).toEqual([]);
    const sample = await text(sampleDownload(screeningJob(papers), papers.map((p) => p.id), "ris"));
    expect(sample.split(SPLITLINES).filter((line) => line.startsWith("TY  -"))).toHaveLength(papers.length);
  });
});

describe("the provider-key header at the edge", () => {
  let app: Awaited<ReturnType<typeof testGateway>> | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it("refuses an X-LLM-API-Key longer than any provider key with the spec's 400 body, before any service is asked", async () => {
    app = await testGateway(offlineLink(), { API_KEY: "security-test-key" });
    const headers = { "x-api-key": "security-test-key", "content-type": "application/json", "x-llm-api-key": `sk-${"a".repeat(8_000)}` };
    const res = await app.inject({ method: "POST", url: "/v1/criteria/analyze-question", headers, payload: { research_question: "q" } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ detail: [expect.objectContaining({ loc: ["header", "x-llm-api-key"] })] });
    const job = await app.inject({ method: "POST", url: "/v1/screening/jobs", headers, payload: { papers: [{ id: 1, title: "t", abstract: "a" }], criteria: [] } });
    expect(job.statusCode).toBe(400);
    expect(job.json()).toEqual({ detail: [expect.objectContaining({ loc: ["header", "x-llm-api-key"] })] });
  });
});
