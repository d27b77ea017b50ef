import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobReport, type IndexerField } from "@litrev/contracts";
import { risTagRecords } from "@litrev/references";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords, parseCsv } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

const SERVER_KEY = "sk-exports-server";
/** Keeps a byte-order mark (`res.text()` drops it). */
const BYTES_AS_SENT = new TextDecoder("utf-8", { ignoreBOM: true });
const BOB_KEY = "bob-service-key-0123456789";
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];

/** A completed job's exports and reports, read back from the store of record through the gateway. */
describe("job exports and methods reports (issue 19)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 5 });
    provider.setBehaviour({ mode: "normal", latencyMs: 5, respond: screeningResponder() });
    // Locked down as `npm start` runs NATS: the new operations work within each process's permissions.
    stack = await startStack({
      lockedNats: true,
      services: { screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, API_KEYS: `bob:use:${BOB_KEY}` },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const text = async (path: string, key?: string) => {
    const res = await fetch(`${stack.baseUrl}${path}`, { headers: { authorization: `Bearer ${key ?? "test-service-key-0123456789"}` } });
    return { status: res.status, type: res.headers.get("content-type") ?? "", disposition: res.headers.get("content-disposition") ?? "", body: BYTES_AS_SENT.decode(await res.arrayBuffer()) };
  };
  const finished = (kind: string, id: string) =>
    waitFor(async () => {
      const res = await stack.http("GET", `/v1/${kind}/jobs/${id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : undefined;
    }, 90_000, 200);

  it("exports a completed screening job as CSV and JSON Lines, one row per paper, and reports its methods", async () => {
    // Two papers without an abstract: the report counts them.
    const papers = screeningPapers(12).map((p, i) => (i === 3 || i === 8 ? { ...p, abstract: "" } : p));
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 3, model: "llm-5-nano" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    // Not finished yet: nothing to export, said plainly.
    const early = await text(`/v1/screening/jobs/${id}/export`);
    if (early.status !== 200) expect(early.status).toBe(409);
    const job = await finished("screening", id);
    expect(job.status).toBe("completed");

    const csv = await text(`/v1/screening/jobs/${id}/export?format=csv`);
    expect(csv.status, csv.body).toBe(200);
    expect(csv.type).toBe("text/csv; charset=utf-8");
    expect(csv.disposition).toContain(`screening-${id}.csv`);
    // For a spreadsheet by default: a byte-order mark (Excel reads UTF-8).
    expect(csv.body.startsWith("\uFEFF")).toBe(true);
    const rows = parseCsv(csv.body.slice(1));
    const header = rows[0]!;
    expect(header).toEqual([
      "id", "title", "decision", "final_score", "include_votes", "repetitions", "cluster_id", "cluster_label",
      ...CRITERIA.map((c, i) => `criterion_${i + 1}: ${c.name}`),
      "reasoning", "error",
    ]);
    const body = rows.slice(1);
    expect(body.map((r) => r[0])).toEqual(papers.map((p) => p.id));
    const labels = new Map((job.clusters as { cluster_id: number; label: string }[]).map((c) => [String(c.cluster_id), c.label]));
    for (const [i, row] of body.entries()) {
      const result = job.results[i];
      expect(row).toHaveLength(header.length);
      expect(row[1]).toBe(papers[i]!.title.replace(/^([=+\-@\t\r])/, "'$1"));
      expect(row[2]).toBe(result.decision);
      expect(Number(row[3])).toBe(result.final_score);
      expect(Number(row[4])).toBe(result.votes.filter((v: string) => v === "include").length);
      expect(row[5]).toBe("3");
      expect(row[7]).toBe(labels.get(row[6]!) ?? "");
      expect(row.slice(8, 8 + CRITERIA.length)).toEqual(result.criteria_verdicts.map((v: { verdict: string }) => v.verdict));
      expect(row[header.length - 2]).toBe(result.reasoning);
      expect(row[header.length - 1]).toBe(result.error ?? "");
    }

    // Also served without /v1, as every route.
    const jsonl = await text(`/screening/jobs/${id}/export?format=jsonl`);
    expect(jsonl.status).toBe(200);
    expect(jsonl.type).toBe("application/x-ndjson; charset=utf-8");
    const lines = jsonl.body.trimEnd().split("\n").map((line) => JSON.parse(line));
    expect(lines.map((l) => l.id)).toEqual(papers.map((p) => p.id));
    expect(lines.map((l) => l.title)).toEqual(papers.map((p) => p.title));
    expect(lines[0]).toMatchObject({ ...job.results[0], cluster_label: labels.get(String(job.results[0].cluster_id)) ?? null });

    // For scripts: values as they are, no byte-order mark, the same rows.
    const plain = await text(`/v1/screening/jobs/${id}/export?format=csv&csv=plain`);
    expect(plain.body.startsWith("id,title,")).toBe(true);
    expect(parseCsv(plain.body).slice(1).map((r) => r[1])).toEqual(papers.map((p) => p.title));

    // RIS, parsed back with the import library the console uses: every paper, its title, decision and reasons.
    const ris = await text(`/v1/screening/jobs/${id}/export?format=ris`);
    expect(ris.status).toBe(200);
    expect(ris.type).toBe("application/x-research-info-systems; charset=utf-8");
    expect(ris.disposition).toContain(`screening-${id}.ris`);
    const records = risTagRecords(ris.body);
    expect(records.map((r) => r.ID)).toEqual(papers.map((p) => p.id));
    for (const [i, record] of records.entries()) {
      const result = job.results[i];
      expect(record.TI).toBe(papers[i]!.title);
      if (papers[i]!.abstract) expect(record.AB).toBeTruthy();
      const keywords = [record.KW ?? []].flat();
      expect(keywords).toContain(`litrev: ${result.decision}`);
      const notes = [record.N1 ?? []].flat().join("\n");
      expect(notes).toContain(`litrev screening decision: ${result.decision}`);
    }

    const md = await text(`/v1/screening/jobs/${id}/report`);
    expect(md.status).toBe(200);
    expect(md.type).toBe("text/markdown; charset=utf-8");
    expect(md.body).toContain(`- 12 papers in the results.`);
    expect(md.body).toContain("# Methods report: Title and abstract screening of 12 papers against 4 criteria");
    expect(md.body).toContain("Repetitions (votes per paper): 3");
    expect(md.body).toContain("- Requested: llm-5-nano");
    expect(md.body).toMatch(/- Resolved at admission: \S+/);
    expect(md.body).toContain("## Prompts");
    const json = await text(`/v1/screening/jobs/${id}/report?format=json`);
    const report = JobReport.parse(JSON.parse(json.body));
    expect(report.outcomes.items).toBe(12);
    expect((report.outcomes.by_outcome.include ?? 0) + (report.outcomes.by_outcome.exclude ?? 0)).toBe(12);
    expect(report.repetitions).toBe(3);
    // Once the job records provenance, the report names the model it resolved and its prompts.
    if (job.provenance) {
      expect(md.body).toContain(`- Resolved at admission: ${job.provenance.model_resolved}`);
      for (const prompt of job.provenance.prompts) expect(md.body).toContain(prompt.sha256);
    }

    // Every number of the report matches the job as its poll shows it (issue 28).
    const results = job.results as { decision: string; error?: string; criteria_verdicts: { name: string; type: string; verdict: string }[] }[];
    const included = results.filter((r) => r.decision === "include").length;
    const excluded = results.filter((r) => r.decision === "exclude").length;
    const errored = results.filter((r) => r.error).length;
    const reasons: Record<string, number> = {};
    for (const r of results.filter((r) => r.decision === "exclude")) {
      const fell = r.criteria_verdicts.filter((c) => (c.type === "exclude" ? c.verdict === "met" : c.verdict === "not_met")).map((c) => c.name);
      for (const name of fell.length > 0 ? fell : ["no single criterion"]) reasons[name] = (reasons[name] ?? 0) + 1;
    }
    const withoutAbstract = papers.filter((p) => !p.abstract.trim()).length;
    expect(withoutAbstract).toBeGreaterThanOrEqual(2);
    expect(report.prisma).toEqual({ records_in: 12, results: 12, included, excluded, errored, without_abstract: withoutAbstract, exclusion_reasons: reasons });
    expect(report.asked?.criteria).toEqual(CRITERIA.map((c) => ({ name: c.name, type: c.type, text: c.value })));
    expect(md.body).toContain(["## PRISMA counts", "", "- Records in: 12", "- With a result: 12", `- Included: ${included}`, `- Excluded: ${excluded}`, `- Errored (no usable answer from the model): ${errored}`, `- Without abstract: ${withoutAbstract}`].join("\n"));
    for (const [name, n] of Object.entries(reasons)) expect(md.body).toContain(`  - ${name}: ${n}`);
    // The criteria as typed, the paragraph (its numbers the job's) and the checklist table.
    CRITERIA.forEach((c, i) => expect(md.body).toContain(`- Criterion ${i + 1} (${c.type}), ${c.name}: ${c.value}`));
    expect(report.methods_paragraph).toContain(`Titles and abstracts of 12 records were screened on ${job.created_at.slice(0, 10)}`);
    expect(report.methods_paragraph).toContain("Each paper was judged 3 times independently against 4 eligibility criteria (3 for inclusion, 1 for exclusion)");
    expect(report.methods_paragraph).toContain(`Of 12 screened records, ${included} ${included === 1 ? "was" : "were"} included and ${excluded} excluded; ${errored} received no usable decision`);
    expect(report.methods_paragraph).toContain(`${withoutAbstract} had no abstract`);
    expect(report.methods_paragraph).toContain(`through the provider at ${new URL(provider.url).host}`);
    expect(md.body).toContain("## Methods paragraph");
    expect(md.body).toContain("| Guideline | Item | Answer |");
    expect(md.body).toMatch(/\| RAISE, PRISMA-trAIce \| Role of the AI .* \| \*for you to fill in\* \|/);
    // Usage, cost and time as the poll has them.
    const usage = job.usage as { input_tokens: number; cached_input_tokens: number; output_tokens: number; calls: number; retries: number };
    expect(md.body).toContain(`- Tokens: ${usage.input_tokens} input (${usage.cached_input_tokens} cached), ${usage.output_tokens} output`);
    expect(md.body).toContain(`- Calls: ${usage.calls}; retries: ${usage.retries}`);
    expect(md.body).toContain(`- Actual cost: $${(job.actual_cost_usd as number).toFixed(4)}; estimated at creation: $${(job.estimated_cost_usd as number).toFixed(4)}`);
    expect(md.body).toContain(`- Created: ${job.created_at}; completed: ${job.completed_at}; duration: ${(job.duration_ms / 1000).toFixed(1)} s`);
    expect(md.body).toContain(`- Threshold: ${job.provenance.threshold}`);
    // Temperature is not sent to this model family: said as such, not "not recorded".
    expect(md.body).toContain("temperature not sent (provider default)");

    // Same rules as a poll: another client's job and an unknown job are not found.
    expect((await text(`/v1/screening/jobs/${id}/export`, BOB_KEY)).status).toBe(404);
    expect((await text(`/v1/screening/jobs/${id}/report`, BOB_KEY)).status).toBe(404);
    expect((await text(`/v1/screening/jobs/00000000-0000-4000-8000-000000000000/export`)).status).toBe(404);
    expect((await text(`/v1/screening/jobs/not-a-job/report`)).status).toBe(404);
    const bad = await text(`/v1/screening/jobs/${id}/export?format=xlsx`);
    expect(bad.status).toBe(400);
  }, 120_000);

  it("exports a completed indexer job with each field's value, confidence and quotes", async () => {
    // Slow answers: the job is surely still running when its export is asked for.
    provider.setBehaviour({ mode: "normal", latencyMs: 400, respond: extractionResponder() });
    const records = indexerRecords(8, { withAbstractOnly: true });
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    for (const path of [`/v1/indexer/jobs/${id}/export`, `/v1/indexer/jobs/${id}/report`]) {
      const early = await text(path);
      expect(early.status, early.body).toBe(409);
      expect(JSON.parse(early.body).detail).toMatch(/^Job .* is still (pending|running): its export and report are available once it has finished$/);
    }
    const job = await finished("indexer", id);
    expect(job.status).toBe("completed");

    const csv = await text(`/v1/indexer/jobs/${id}/export`);
    expect(csv.status, csv.body).toBe(200);
    const rows = parseCsv(csv.body.replace(/^\uFEFF/, ""));
    expect(rows[0]).toEqual(["ID", "title", "indexing_status", ...FIELDS.flatMap((f) => [f.name, `${f.name}_confidence`, `${f.name}_evidence`])]);
    expect(rows.slice(1).map((r) => r[0])).toEqual(records.map((r) => r.ID));
    for (const [i, row] of rows.slice(1).entries()) {
      const record = job.partial_results[i];
      expect(row[1]).toBe(String(records[i]!.Title ?? "").replace(/^([=+\-@\t\r])/, "'$1"));
      expect(row[2]).toBe(record.indexing_status);
      const design = record.design as { value: unknown; confidence: number; evidence: { quote: string }[] };
      expect(row[3]).toBe(design.value === null ? "" : String(design.value).replace(/^([=+\-@\t\r])/, "'$1"));
      expect(Number(row[4])).toBe(design.confidence);
      expect(row[5]).toBe(design.evidence.map((e) => e.quote).join("; ").replace(/^([=+\-@\t\r])/, "'$1"));
    }
    const jsonl = await text(`/v1/indexer/jobs/${id}/export?format=jsonl`);
    const lines = jsonl.body.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map(({ title: _title, ...rest }) => rest)).toEqual(job.partial_results);
    expect(lines.map((l) => l.title)).toEqual(records.map((r) => r.Title ?? ""));
    const ris = risTagRecords((await text(`/v1/indexer/jobs/${id}/export?format=ris`)).body);
    expect(ris.map((r) => r.ID)).toEqual(records.map((r) => String(r.ID)));
    for (const r of ris) expect([r.KW ?? []].flat()).toContain("litrev: ok");

    const md = await text(`/indexer/jobs/${id}/report`);
    expect(md.status).toBe(200);
    expect(md.body).toContain("- 8 records in the results.");
    expect(md.body).toMatch(/- ok: 8/);
    const report = JobReport.parse(JSON.parse((await text(`/v1/indexer/jobs/${id}/report?format=json`)).body));
    expect(report.kind).toBe("indexer");
    expect(report.asked?.fields).toEqual(FIELDS);
    expect(report.prisma).toMatchObject({ records_in: 8, results: 8, included: null, excluded: null, errored: 0, without_abstract: 0 });
    expect(md.body).toContain("# Methods report: Data extraction of 2 fields from 8 records");
    expect(report.usage?.input_tokens).toBeGreaterThan(0);
  }, 120_000);
});
