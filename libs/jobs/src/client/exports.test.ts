import { describe, expect, it } from "vitest";
import type { ItemText } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { exportBody, type FinishedJob } from "./exports";
import { sampleDownload } from "./sample-download";
import { risRecord } from "./ris";

const record = (config: Record<string, unknown>) =>
  ({ job_id: "j", status: "completed", config, model_version: "m", created_at: "", completed_at: "", duration_ms: 1, estimated_cost_usd: null, error: null }) as unknown as FinishedJob["record"];

function job(config: Record<string, unknown>, chunks: JsonRecord[][], result: JsonRecord = {}, texts?: ItemText[][]): FinishedJob & { reads: number; abstractReads: number } {
  const out = {
    record: record(config),
    result,
    reads: 0,
    abstractReads: 0,
    chunks: async function* () {
      out.reads++;
      for (const chunk of chunks) yield chunk;
    },
    ...(texts
      ? {
          titles: async function* () {
            for (const chunk of texts) yield chunk.map((t) => t.title);
          },
          abstracts: async function* () {
            out.abstractReads++;
            for (const chunk of texts) yield chunk.map((t) => t.abstract);
          },
        }
      : {}),
  };
  return out;
}

const verdicts = (...v: string[]) => v.map((verdict, i) => ({ name: `C${i}`, type: "include", verdict }));

/** The export's whole text. */
async function joined(pieces: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const piece of pieces) out += piece;
  return out;
}

describe("exportBody", () => {
  it("takes the criteria columns from the first paper that has verdicts, over chunks, and keeps lost papers as rows with their error", async () => {
    const lost = { id: "p1", final_score: null, cluster_id: -1, reasoning: "", decision: "include", votes: [], criteria_verdicts: [], error: "The model never answered for this paper" };
    const done = (id: string) => ({ id, final_score: 2, cluster_id: 0, reasoning: "=cmd|' /C calc'!A0", decision: "include", votes: ["include", "exclude", "include"], criteria_verdicts: verdicts("met", "unclear") });
    const source = job({ criteria_count: 2, repetitions: 3 }, [[lost], [done("p2"), done("p3")]], { clusters: [{ cluster_id: 0, label: "Nudges", count: 2 }] });
    const text = await joined(exportBody("screening", source, "csv"));
    const lines = text.split("\r\n");
    expect(lines[0]).toBe("\uFEFFid,title,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,criterion_1: C0,criterion_2: C1,reasoning,error");
    expect(lines[1]).toBe("p1,,include,,,3,-1,,,,,The model never answered for this paper");
    // The reasoning would run as a formula in a spreadsheet: neutralised.
    expect(lines[2]).toBe("p2,,include,2,2,3,0,Nudges,met,unclear,'=cmd|' /C calc'!A0,");
    expect(lines).toHaveLength(5); // three rows and the final CRLF
    expect(source.reads).toBe(2); // the columns showed in the second chunk: the rows read the items again
  });

  it("needs no look-ahead when the job has no criteria, and writes one JSON object per line", async () => {
    const items = [{ id: 1, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }];
    const source = job({ criteria_count: 0, repetitions: 1 }, [items]);
    expect((await joined(exportBody("screening", source, "csv", "plain"))).split("\r\n")[0]).toBe("id,title,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,reasoning,error");
    expect(source.reads).toBe(1);
    const jsonl = await joined(exportBody("screening", source, "jsonl"));
    expect(jsonl).toBe(`${JSON.stringify({ id: 1, title: "", ...items[0], cluster_label: null })}\n`);
  });

  it("writes an indexer field's value, confidence and quotes", async () => {
    const item = { ID: "r1", indexing_status: "ok", n: { value: 120, confidence: 0.9, evidence: [{ quote: "120 adults" }, { quote: "n = 120" }] }, tags: { value: ["a", "b"], confidence: 0.5, evidence: [] } };
    const text = await joined(exportBody("indexer", job({ fields_count: 2 }, [[item]]), "csv", "plain"));
    expect(text).toBe("ID,title,indexing_status,n,n_confidence,n_evidence,tags,tags_confidence,tags_evidence\r\nr1,,ok,120,0.9,120 adults; n = 120,a; b,0.5,\r\n");
  });

  const paper = (id: string | number, decision: string, verdict: string) => ({
    id,
    decision,
    final_score: decision === "include" ? 2 : 0,
    cluster_id: 0,
    reasoning: "-2 votes \nsaid so",
    votes: decision === "include" ? ["include", "include"] : ["exclude", "exclude"],
    criteria_verdicts: [{ name: "Adults", type: "include", verdict }],
  });
  // Texts in other chunk sizes than the items: they are read line for line beside them.
  const titled = () =>
    job({ criteria_count: 1, repetitions: 2, threshold: 1 }, [[paper("-2", "include", "met"), paper(7, "exclude", "not_met")], [paper("=1", "exclude", "met")]], {}, [
      [{ title: "Zoë and α ≥ β", abstract: "An abstract\u2028\nover lines" }],
      [{ title: "=HYPERLINK(\"x\")", abstract: "" }, { title: "Third", abstract: "Text" }],
    ]);

  it("gives every row its title; a spreadsheet CSV guards every text cell, the id too (a plain-number id stays as it is), a plain one writes values as they are", async () => {
    const source = titled();
    const sheet = (await joined(exportBody("screening", source, "csv"))).split("\r\n");
    // The first paper shows the criteria columns: the rows go on from the same read of the items.
    expect(source.reads).toBe(1);
    expect(sheet[0]!.startsWith("\uFEFFid,title,")).toBe(true);
    expect(sheet[1]!.startsWith("-2,Zoë and α ≥ β,include,2,2,2,")).toBe(true);
    expect(sheet[2]!.startsWith(`7,"'=HYPERLINK(""x"")",exclude,`)).toBe(true);
    expect(sheet[3]!.startsWith("'=1,Third,exclude,")).toBe(true);
    const plain = await joined(exportBody("screening", titled(), "csv", "plain"));
    expect(plain.startsWith("id,title,")).toBe(true);
    expect(plain).toContain(`7,"=HYPERLINK(""x"")",exclude,`);
    expect(plain).not.toContain("'");
  });

  it("writes one RIS record per paper: id, title, abstract on one line, the decision and reasons in KW and N1", async () => {
    const ris = await joined(exportBody("screening", titled(), "ris"));
    const records = ris.split("ER  - \r\n").filter(Boolean);
    expect(ris.endsWith("ER  - \r\n")).toBe(true);
    expect(records).toHaveLength(3);
    expect(records[0]).toBe(
      [
        "TY  - JOUR",
        "ID  - -2",
        "TI  - Zoë and α ≥ β",
        "AB  - An abstract over lines",
        "KW  - litrev: include",
        "KW  - litrev theme: ",
        "",
      ].join("\r\n").replace("KW  - litrev theme: \r\n", "") +
        "N1  - litrev screening decision: include (2 of 2 votes for include; threshold 1).\r\nN1  - Reasoning: -2 votes said so\r\nN1  - Criteria: Adults (include): met.\r\n",
    );
    expect(records[1]).toContain("KW  - litrev: exclude\r\nKW  - litrev reason: Adults\r\n");
    expect(records[1]).not.toContain("AB  - ");
    // A title cannot end its record or start another: line breaks inside a value become spaces.
    const forged = risRecord({ id: "1", title: "T\r\nER  - \r\nTY  - JOUR\nTI  - forged", abstract: "", keywords: [], notes: [] });
    expect(forged.match(/^TY {2}- /gm)).toHaveLength(1);
    expect(forged).toContain("TI  - T ER  - TY  - JOUR TI  - forged\r\n");
  });

  it("writes titles into JSON Lines next to the id", async () => {
    const [first] = (await joined(exportBody("screening", titled(), "jsonl"))).trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(Object.keys(first!).slice(0, 2)).toEqual(["id", "title"]);
    expect(first!.title).toBe("Zoë and α ≥ β");
  });

  it("reads the abstracts only for RIS and the sample download: CSV and JSON Lines read the titles alone", async () => {
    for (const format of ["csv", "jsonl"] as const) {
      const source = titled();
      expect(await joined(exportBody("screening", source, format))).toContain("Third");
      expect(source.abstractReads).toBe(0);
    }
    const ris = titled();
    expect(await joined(exportBody("screening", ris, "ris"))).toContain("AB  - Text");
    expect(ris.abstractReads).toBe(1);
    const sample = titled();
    const download = await joined(sampleDownload(sample, ["=1", 7], "csv", "plain"));
    expect(download.split("\r\n").slice(1, 3)).toEqual(["1,=1,Third,Text,", '2,7,"=HYPERLINK(""x"")",,']);
    expect(sample.abstractReads).toBe(1);
  });

  it("streams a validation sample in its own order, holding at most a window of its texts (a pass over the job per window)", async () => {
    const items = Array.from({ length: 40 }, (_, i) => ({ id: `p${i}`, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }));
    const texts = items.map((_, i) => ({ title: `Title ${i}`, abstract: "x".repeat(1_000 + i) }));
    const chunks = [items.slice(0, 15), items.slice(15, 30), items.slice(30)];
    const textChunks = [texts.slice(0, 15), texts.slice(15, 30), texts.slice(30)];
    const order = [39, 3, 17, 0, 25, 8, 31, 12, 2, 36].map((i) => `p${i}`);
    const whole = job({ criteria_count: 0, repetitions: 1 }, chunks, {}, textChunks);
    const expected = await joined(sampleDownload(whole, order, "csv", "plain"));
    const windowed = job({ criteria_count: 0, repetitions: 1 }, chunks, {}, textChunks);
    // About three papers' texts per window: four passes for ten papers, the same bytes.
    expect(await joined(sampleDownload(windowed, order, "csv", "plain", 3_100))).toBe(expected);
    expect(windowed.abstractReads).toBe(4);
    const rows = expected.split("\r\n").slice(1, -1);
    expect(rows.map((row) => row.split(",").slice(0, 3).join(","))).toEqual(order.map((id, i) => `${i + 1},${id},Title ${id.slice(1)}`));
  });

  it("gives a large chunk's rows in pieces of about 64 KiB, not the chunk's text at once", async () => {
    const items = Array.from({ length: 4_000 }, (_, i) => ({ id: `p${i}`, decision: "exclude", votes: ["exclude"], criteria_verdicts: [], cluster_id: 0 }));
    const titles = items.map((_, i) => ({ title: `A title long enough to count, number ${i}`.padEnd(120, "."), abstract: "" }));
    const pieces: string[] = [];
    for await (const piece of exportBody("screening", job({ criteria_count: 0, repetitions: 1 }, [items], {}, [titles]), "jsonl")) pieces.push(piece);
    expect(pieces.join("").split("\n")).toHaveLength(items.length + 1);
    expect(pieces.length).toBeGreaterThan(5);
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(64 * 1024 + 1_000);
  });
});
