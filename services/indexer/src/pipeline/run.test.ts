import { describe, expect, it } from "vitest";
import { defaultServiceConfig, readDataBlocks, ServiceError, type IndexerField, type IndexerRecord, type LlmUsage } from "@litrev/contracts";
import { LlmAbortError, structuredFormat, type StructuredResult } from "@litrev/llm";
import { loadNagtegaal } from "../../../../test/support/dataset";
import { CONFIDENCE } from "./coerce";
import { checkField, extractRecord, type StructuredCaller } from "./extract-record";
import { EvidenceLocator } from "./evidence";
import { fieldSpecs } from "./field-spec";
import { MOCK_TEXT, mockExtractionCaller } from "./mock-extraction";
import { extractionPlan } from "./plan";
import { runExtraction } from "./run";

const fields: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "n", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];
const plan = extractionPlan({ fields, model: "llm-5-mini" }, defaultServiceConfig("extraction"));
const usage: LlmUsage = { calls: 1, input_tokens: 100, cached_input_tokens: 0, output_tokens: 20, cost_usd: 0.001, retries: 0, models: { "gpt-5-mini-2025-08-07": 1 } };
const rows = loadNagtegaal().filter((r) => r.abstract.trim());
const records: IndexerRecord[] = rows.slice(0, 23).map((r) => ({ ID: r.record_id, Title: r.title, Abstract: r.abstract }));

/**
 * An in-process stand-in for the provider: answers from the real abstract in the user message
 * (its first sentence as the design quote), through the same schema decoding as LlmClient.
 */
function scriptedCaller(options: { delayMs?: (call: number) => number; fail?: (call: number) => unknown } = {}) {
  let calls = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const caller: StructuredCaller = {
    async structured(request) {
      const call = calls++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise((r) => setTimeout(r, options.delayMs?.(call) ?? 1));
        if (request.signal?.aborted) throw new LlmAbortError(request.signal.reason);
        const failure = options.fail?.(call);
        if (failure) throw failure;
        const abstract = String(readDataBlocks(request.user)[0]?.records[0]?.abstract ?? "");
        const sentence = abstract.split(". ")[0] ?? "";
        const reply = { design: { value: "trial", confidence: 0.8, evidence: [{ quote: sentence, source: "abstract" }] }, n: { value: null, confidence: 0.9, evidence: [] } };
        const decoded = structuredFormat(request.schemaName, request.schema).decode(JSON.stringify(reply));
        if (!decoded.ok) throw new Error(decoded.problem);
        return { data: decoded.value, choices: [decoded.value], usage, modelVersion: "gpt-5-mini-2025-08-07" } as StructuredResult<never>;
      } finally {
        inFlight--;
      }
    },
  };
  return { caller, calls: () => calls, maxInFlight: () => maxInFlight };
}

describe("runExtraction", () => {
  it("keeps input order, bounds concurrency, delivers batches in order, sums usage", async () => {
    const fake = scriptedCaller({ delayMs: (call) => (call % 3) * 5 });
    const batches: [number, number][] = [];
    const summary = await runExtraction(fake.caller, plan, records, {
      concurrency: 4,
      batchSize: 5,
      onBatch: (outcomes, first) => void batches.push([first, outcomes.length]),
    });
    expect(summary.outcomes.map((o) => o.record.ID)).toEqual(records.map((r) => r.ID));
    expect(fake.maxInFlight()).toBeLessThanOrEqual(4);
    expect(fake.maxInFlight()).toBeGreaterThan(1);
    expect(batches).toEqual([[0, 5], [5, 5], [10, 5], [15, 5], [20, 3]]);
    expect(summary.usage).toMatchObject({ calls: 23, input_tokens: 23 * 100, output_tokens: 23 * 20 });
    expect(summary.modelVersion).toBe("gpt-5-mini-2025-08-07");
    expect(summary.quotes).toMatchObject({ claimed: 23, verified: 23, dropped: 0 });
  });

  it("processes a record without abstract without calling the provider", async () => {
    const fake = scriptedCaller();
    const outcome = await extractRecord(fake.caller, plan, { ID: 7, Title: "Only a title", Abstract: "  " });
    expect(fake.calls()).toBe(0);
    expect(outcome.record).toMatchObject({ ID: 7, indexing_status: "no_abstract", design: { value: null, evidence: [] }, n: { value: null } });
    expect(outcome.error).toMatch(/no abstract/);
  });

  it("reports a record whose call failed and carries on with the others", async () => {
    const fake = scriptedCaller({ fail: (call) => (call === 2 ? new ServiceError("unknown", "The language model did not return a valid reply") : undefined) });
    const summary = await runExtraction(fake.caller, plan, records.slice(0, 6), { concurrency: 1, batchSize: 50 });
    const statuses = summary.outcomes.map((o) => o.record.indexing_status);
    expect(statuses).toEqual(["ok", "ok", "error", "ok", "ok", "ok"]);
    expect(summary.outcomes[2]?.error).toBe(`Record ${records[2]!.ID}: The language model did not return a valid reply`);
  });

  it("stops at a fatal provider error and starts no further calls", async () => {
    const fake = scriptedCaller({ delayMs: () => 5, fail: (call) => (call === 3 ? new ServiceError("auth", "The language-model provider rejected the API key") : undefined) });
    await expect(runExtraction(fake.caller, plan, records, { concurrency: 2, batchSize: 50 })).rejects.toMatchObject({ category: "auth" });
    expect(fake.calls()).toBeLessThanOrEqual(5);
  });

  it("answers within its time budget, returning the records it did not reach as not_processed", async () => {
    const fake = scriptedCaller({ delayMs: () => 40 });
    const batches: number[] = [];
    const summary = await runExtraction(fake.caller, plan, records.slice(0, 12), {
      concurrency: 2,
      batchSize: 4,
      deadlineMs: 100,
      onBatch: (outcomes) => void batches.push(outcomes.length),
    });
    const statuses = summary.outcomes.map((o) => o.record.indexing_status);
    expect(statuses).toHaveLength(12);
    const done = statuses.filter((s) => s === "ok").length;
    expect(done).toBeGreaterThan(0);
    expect(done).toBeLessThan(12);
    // Reached records come first (workers take records in order), the rest are not_processed.
    expect(statuses).toEqual([...Array(done).fill("ok"), ...Array(12 - done).fill("not_processed")]);
    expect(summary.outcomes[11]?.error).toMatch(/not processed.*\/v1\/indexer\/jobs/);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(12);
  });
});

describe("checkField: evidence and confidence", () => {
  const abstract = "Overall, 140 patients were at sufficient risk for venous thromboembolism to be included.";
  const spec = fieldSpecs(fields)[1]!;
  const locator = () => new EvidenceLocator({ title: "A trial", abstract });
  const stats = () => ({ claimed: 0, verified: 0, dropped: 0 });

  it("keeps a verified quote and the model's confidence", () => {
    const out = checkField(spec, { value: 140, confidence: 0.9, evidence: [{ quote: "140 patients were at sufficient risk", source: "abstract" }] }, locator(), stats());
    expect(out).toEqual({ value: 140, confidence: 0.9, flags: [], evidence: [{ quote: "140 patients were at sufficient risk", source: "abstract", start: 9, end: 45, match: "exact" }] });
  });

  it("drops an invented quote and lowers the confidence", () => {
    const counts = stats();
    const out = checkField(
      spec,
      { value: 140, confidence: 0.9, evidence: [{ quote: "140 patients were at sufficient risk", source: "abstract" }, { quote: "all 140 patients completed follow-up", source: "abstract" }] },
      locator(),
      counts,
    );
    expect(out.evidence).toHaveLength(1);
    expect(out.confidence).toBeCloseTo(0.9 * CONFIDENCE.quoteDropped);
    expect(out.flags).toEqual(["quote_not_found"]);
    expect(counts).toEqual({ claimed: 2, verified: 1, dropped: 1 });
  });

  it("flags a value with no verified evidence and caps its confidence", () => {
    const out = checkField(spec, { value: 140, confidence: 0.95, evidence: [{ quote: "one hundred and forty adults", source: "abstract" }] }, locator(), stats());
    expect(out).toMatchObject({ value: 140, evidence: [], flags: ["quote_not_found", "unverified"], confidence: CONFIDENCE.unverifiedCap });
  });

  it("reads confidence leniently", () => {
    const conf = (c: unknown) => checkField(spec, { value: null, confidence: c, evidence: [] }, locator(), stats()).confidence;
    expect(conf(85)).toBe(0.85);
    expect(conf("0.7")).toBe(0.7);
    expect(conf(-1)).toBe(0);
    expect(conf("high")).toBe(0.5);
  });
});

describe("mock extraction", () => {
  it("answers every field with a typed placeholder through the real checks: unverified, confidence 0, no usage", async () => {
    const typed: IndexerField[] = [
      ...fields,
      { name: "rct", description: "Randomised?", data_type_primary: "yes_no", data_type_secondary: "NA" },
      { name: "countries", description: "Where", data_type_primary: "list_text", data_type_secondary: "NA" },
      { name: "year", description: "Year", data_type_primary: "number", data_type_secondary: "year" },
      { name: "arm", description: "Arm", data_type_primary: "text", data_type_secondary: "NA", examples: ["drug", "placebo"], examples_mode: "enum" },
    ];
    const mockPlan = extractionPlan({ fields: typed, model: "llm-5-mini" }, defaultServiceConfig("extraction"));
    const summary = await runExtraction(mockExtractionCaller(mockPlan.specs), mockPlan, records.slice(0, 3), { concurrency: 2, batchSize: 2 });
    expect(summary.usage).toMatchObject({ calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 });
    const [first] = summary.outcomes;
    expect(first?.record).toMatchObject({
      indexing_status: "ok",
      design: { value: MOCK_TEXT, confidence: 0, evidence: [], flags: ["unverified"] },
      n: { value: 0, confidence: 0 },
      rct: { value: false },
      countries: { value: [MOCK_TEXT] },
      year: { value: 2000, flags: ["unverified"] },
      arm: { value: "drug" },
    });
    // Deterministic: every record the same values.
    const values = summary.outcomes.map(({ record: { ID: _id, ...rest } }) => rest);
    expect(new Set(values.map((v) => JSON.stringify(v))).size).toBe(1);
  });
});
