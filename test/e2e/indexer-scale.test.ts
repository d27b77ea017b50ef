import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { indexerRecords, loadNagtegaal } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { startStack, type Stack } from "../support/stack";

const FIELDS: IndexerField[] = [
  { name: "study_design", description: "Design of the study", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Number of participants", data_type_primary: "number", data_type_secondary: "count" },
  { name: "significant_effect", description: "Whether a significant effect is reported", data_type_primary: "yes_no", data_type_secondary: "NA" },
  { name: "outcomes", description: "Outcomes measured", data_type_primary: "list_text", data_type_secondary: "NA", depth: "full" },
  { name: "percentages", description: "Percentages reported", data_type_primary: "list_number", data_type_secondary: "percentage" },
];

describe("AutoIndexer at scale: synchronous runs of 300 and 1,000 (the documented maximum) real records", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 20, respond: extractionResponder() });
    stack = await startStack({ services: { indexer: 1 }, env: { OPENAI_API_KEY: "sk-scale", OPENAI_BASE_URL: provider.url } });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("succeeds through the gateway with every record once, in order, offsets exact", async () => {
    // The first 300 rows of the file, empty abstracts included, as a client would send them.
    const records = indexerRecords(300);
    const started = Date.now();
    const res = await stack.http("POST", "/v1/indexer/run", { records, fields: FIELDS, max_workers: 8 });
    const ms = Date.now() - started;
    expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(200);
    expect(res.body.results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
    const empty = records.filter((r) => !r.Abstract.trim()).length;
    expect(res.body.results.filter((r: { indexing_status: string }) => r.indexing_status === "no_abstract")).toHaveLength(empty);
    expect(res.body.results.filter((r: { indexing_status: string }) => r.indexing_status === "ok")).toHaveLength(300 - empty);
    expect(provider.chatRequests()).toHaveLength(300 - empty);

    const sources = new Map(loadNagtegaal().map((r) => [r.record_id, r]));
    let quotes = 0;
    for (const result of res.body.results) {
      const source = sources.get(String(result.ID))!;
      for (const field of FIELDS) {
        for (const e of result[field.name].evidence) {
          expect((e.source === "title" ? source.title : source.abstract).slice(e.start, e.end)).toBe(e.quote);
          quotes++;
        }
      }
    }
    const replyBytes = Buffer.byteLength(JSON.stringify(res.body));
    console.log(`[indexer-scale] 300 records × 5 fields: ${ms} ms, ${quotes} verified quotes, reply ${(replyBytes / 1024).toFixed(0)} KiB`);
    expect(quotes).toBeGreaterThan(1000);
  });

  it("runs the documented maximum of 1,000 records, whose request and reply exceed one NATS message", async () => {
    const records = indexerRecords(1000);
    const requestBytes = Buffer.byteLength(JSON.stringify({ records, fields: FIELDS }));
    const res = await stack.http("POST", "/v1/indexer/run", { records, fields: FIELDS, max_workers: 8 });
    expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(200);
    expect(res.body.results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
    const replyBytes = Buffer.byteLength(JSON.stringify(res.body));
    console.log(`[indexer-scale] 1,000 records: request ${(requestBytes / 1024).toFixed(0)} KiB, reply ${(replyBytes / 1024).toFixed(0)} KiB`);
    expect(Math.max(requestBytes, replyBytes)).toBeGreaterThan(1024 * 1024);
  });
});
