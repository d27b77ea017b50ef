import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  GroupTagsResponse,
  IndexerEstimateResponse,
  IndexerRunResponse,
  RefineFieldsResponse,
  SuggestFieldsResponse,
  type IndexerField,
} from "@litrev/contracts";
import { startFakeProvider, strictSchemaProblem, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { indexerRecords, loadNagtegaal } from "../support/dataset";
import { extractionResponder, INVENTED_MARK, promptRecord } from "../../services/indexer/src/testing/responder";
import { startStack, type Stack } from "../support/stack";

const SERVER_KEY = "sk-indexer-server-key";
const CLIENT_KEY = "sk-indexer-client-key";
const bodyOf = (r: { body: unknown }) => r.body as FakeChatRequest;
const schemaName = (r: FakeChatRequest) => r.response_format?.json_schema?.name ?? "";

/** One field of every data type, plus an enum field and a qualified number. */
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design in a few words", data_type_primary: "text", data_type_secondary: "NA", depth: "minimal" },
  { name: "sample_size", description: "Number of participants", data_type_primary: "number", data_type_secondary: "count" },
  { name: "effect", description: "Whether a significant effect is reported", data_type_primary: "yes_no", data_type_secondary: "NA" },
  { name: "outcomes", description: "Outcomes measured", data_type_primary: "list_text", data_type_secondary: "NA", depth: "full" },
  { name: "figures", description: "Numbers reported", data_type_primary: "list_number", data_type_secondary: "NA" },
  { name: "setting", description: "Care setting", data_type_primary: "text", data_type_secondary: "NA", examples: ["hospital", "primary care", "nursing home"], examples_mode: "enum" },
];
const TYPE_CHECK: Record<string, (v: unknown) => boolean> = {
  design: (v) => typeof v === "string",
  sample_size: (v) => typeof v === "number" && Number.isInteger(v) && v >= 0,
  effect: (v) => typeof v === "boolean",
  outcomes: (v) => Array.isArray(v) && v.every((x) => typeof x === "string"),
  figures: (v) => Array.isArray(v) && v.every((x) => typeof x === "number"),
  setting: (v) => typeof v === "string" && ["hospital", "primary care", "nursing home"].includes(v),
};

describe("AutoIndexer through the gateway, against a real nats-server and the fake provider", () => {
  let provider: FakeProvider;
  let stack: Stack;
  const sources = new Map(loadNagtegaal().map((r) => [r.record_id, r]));

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY, CLIENT_KEY] });
    stack = await startStack({
      services: { indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2", LLM_DEADLINE_MS: "20000", INDEXER_RUN_BUDGET_MS: "6000" },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => {
    provider.reset();
    provider.setBehaviour({ mode: "normal", latencyMs: 0, respond: extractionResponder() });
  });

  const run = (body: object, headers?: Record<string, string>) => stack.http("POST", "/v1/indexer/run", body, headers ? { headers } : {});

  /** Every evidence element must slice back out of the record's own title or abstract. */
  function checkEvidence(results: IndexerRunResponse["results"]) {
    let elements = 0;
    for (const result of results) {
      const source = sources.get(String(result.ID).replace(/-r\d+$/, ""))!;
      for (const name of Object.keys(result).filter((k) => k !== "ID" && k !== "indexing_status")) {
        const extracted = result[name] as { evidence: { quote: string; source: "title" | "abstract"; start: number; end: number }[] };
        for (const e of extracted.evidence) {
          const text = e.source === "title" ? source.title : source.abstract;
          expect(text.slice(e.start, e.end)).toBe(e.quote);
          elements++;
        }
      }
    }
    return elements;
  }

  it("runs every data type on real records, typed values and evidence offsets that slice back exactly", async () => {
    const records = indexerRecords(20, { withAbstractOnly: true });
    const res = await run({ records, fields: FIELDS, mode: "full", max_workers: 3, batch_size: 7 });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    expect(IndexerRunResponse.safeParse(res.body).success).toBe(true);
    const body = res.body as IndexerRunResponse;
    expect(body.results.map((r) => r.ID)).toEqual(records.map((r) => r.ID));
    expect(body.errors).toEqual([]);
    const matches = new Set<string>();
    for (const result of body.results) {
      expect(result.indexing_status).toBe("ok");
      for (const field of FIELDS) {
        const { value, confidence } = result[field.name] as { value: unknown; confidence: number };
        if (value !== null) expect(TYPE_CHECK[field.name]!(value), `${field.name}=${JSON.stringify(value)}`).toBe(true);
        expect(confidence).toBeGreaterThanOrEqual(0);
        expect(confidence).toBeLessThanOrEqual(1);
        for (const e of (result[field.name] as { evidence: { match: string }[] }).evidence) matches.add(e.match);
      }
    }
    expect(checkEvidence(body.results)).toBeGreaterThan(60);
    // The responder copies a third of its quotes loosely: both kinds of match occur.
    expect([...matches].sort()).toEqual(["exact", "normalized"]);
    expect(body.model_version).toBe("gpt-5-mini-2025-08-07");
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expect(body.usage.total_tokens).toBe(body.usage.input_tokens + body.usage.output_tokens);
    expect(body.usage.estimated_cost_usd).toBeGreaterThan(0);

    // One strict json_schema call per record, values typed per field.
    const chats = provider.chatRequests().map(bodyOf);
    expect(chats).toHaveLength(20);
    const schema = chats[0]!.response_format!.json_schema!;
    expect(schema.strict).toBe(true);
    expect(strictSchemaProblem(schema.schema)).toBeUndefined();
    const value = (key: string) => ((schema.schema!.properties as any)[key].properties.value as { type: unknown; enum?: unknown }); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(value("design").type).toEqual(["string", "null"]);
    expect(value("sample_size").type).toEqual(["integer", "null"]);
    expect(value("effect").type).toEqual(["boolean", "null"]);
    expect(value("outcomes").type).toEqual(["array", "null"]);
    expect(value("setting").enum).toEqual(["hospital", "primary care", "nursing home", null]);
    expect(chats[0]!.model).toBe("gpt-5-mini");
  });

  it("selects the first 5 / 20 / all records by mode", async () => {
    const records = indexerRecords(23, { withAbstractOnly: true });
    for (const [mode, count] of [["test", 5], ["sample", 20], ["full", 23]] as const) {
      provider.reset();
      const res = await run({ records, fields: FIELDS.slice(0, 1), mode });
      expect(res.status).toBe(200);
      expect(res.body.results.map((r: { ID: string }) => r.ID)).toEqual(records.slice(0, count).map((r) => r.ID));
      expect(provider.chatRequests()).toHaveLength(count);
    }
    // Default mode is full.
    provider.reset();
    expect((await run({ records: records.slice(0, 6), fields: FIELDS.slice(0, 1) })).body.results).toHaveLength(6);
  });

  it("drops a quote the model invents, lowers that field's confidence and flags it", async () => {
    provider.setBehaviour({ respond: extractionResponder({ invent: (_r, key) => key === "design", confidence: 0.8 }) });
    const records = indexerRecords(5, { withAbstractOnly: true });
    const res = await run({ records, fields: FIELDS.slice(0, 2) });
    expect(res.status).toBe(200);
    const invented = provider.chatRequests().length;
    expect(invented).toBe(5);
    for (const result of res.body.results) {
      expect(JSON.stringify(result)).not.toContain(INVENTED_MARK);
      expect(result.design.flags).toContain("quote_not_found");
      expect(result.design.confidence).toBeLessThan(0.8);
      expect(result.design.evidence.length).toBeGreaterThan(0);
      // The untouched field keeps the model's confidence.
      if (result.sample_size.value !== null) expect(result.sample_size.confidence).toBe(0.8);
    }
    checkEvidence(res.body.results);
  });

  it("enum mode: a value outside the examples becomes null with lowered confidence", async () => {
    provider.setBehaviour({ respond: extractionResponder({ value: (_r, key) => (key === "setting" ? "intensive care unit" : undefined), confidence: 0.9 }) });
    const res = await run({ records: indexerRecords(3, { withAbstractOnly: true }), fields: [FIELDS[5]!] });
    expect(res.status).toBe(200);
    for (const result of res.body.results) {
      expect(result.setting).toMatchObject({ value: null, flags: ["not_in_enum"] });
      expect(result.setting.confidence).toBeLessThan(0.9);
    }
  });

  it("processes a record with an empty abstract without a provider call, and says why", async () => {
    const empty = loadNagtegaal().find((r) => !r.abstract.trim())!;
    const records = [{ ID: empty.record_id, Title: empty.title, Abstract: "" }, { ID: "no-abstract-key", Title: "Title only" }, ...indexerRecords(1, { withAbstractOnly: true })];
    const res = await run({ records, fields: FIELDS.slice(0, 2) });
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { indexing_status: string }) => r.indexing_status)).toEqual(["no_abstract", "no_abstract", "ok"]);
    expect(res.body.results[0].design).toEqual({ value: null, confidence: 0, evidence: [], flags: [] });
    expect(res.body.errors).toEqual([expect.stringContaining(String(empty.record_id)), expect.stringContaining("no-abstract-key")]);
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("answers bad input with the spec's validation body", async () => {
    const records = indexerRecords(2);
    const cases: [string, object, (string | number)[]][] = [
      ["duplicate field names", { records, fields: [FIELDS[0], FIELDS[0]] }, ["body", "fields", 1, "name"]],
      ["unknown data_type_primary", { records, fields: [{ ...FIELDS[0], data_type_primary: "date" }] }, ["body", "fields", 0, "data_type_primary"]],
      ["record without ID", { records: [{ Title: "t", Abstract: "a" }], fields: FIELDS }, ["body", "records", 0, "ID"]],
      ["empty fields", { records, fields: [] }, ["body", "fields"]],
      ["reserved field name", { records, fields: [{ ...FIELDS[0], name: "ID" }] }, ["body", "fields", 0, "name"]],
      ["missing records", { fields: FIELDS }, ["body", "records"]],
    ];
    for (const [name, body, loc] of cases) {
      const res = await run(body);
      expect(res.status, name).toBe(400);
      expect(res.body.detail, name).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type: expect.any(String), msg: expect.any(String) })]));
    }
    expect(provider.chatRequests()).toHaveLength(0);
  });

  it("refuses a synchronous run beyond the documented limit, pointing to jobs", async () => {
    const records = Array.from({ length: 1001 }, (_, i) => ({ ID: i + 1, Title: "t", Abstract: "a" }));
    const res = await run({ records, fields: FIELDS.slice(0, 1) });
    expect(res.status).toBe(400);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ loc: ["body", "records"], type: "value_error", msg: expect.stringContaining("/v1/indexer/jobs") }),
    ]);
    // The same records in test mode are fine: only the first 5 are processed.
    const test = await run({ records, fields: FIELDS.slice(0, 1), mode: "test" });
    expect(test.status).toBe(200);
    expect(test.body.results).toHaveLength(5);
  });

  it("fails a run with a rejected provider key as 401 auth, and uses a valid client key", async () => {
    const records = indexerRecords(3, { withAbstractOnly: true });
    const bad = await run({ records, fields: FIELDS.slice(0, 1) }, { "x-llm-api-key": "sk-wrong-key-for-indexer" });
    expect(bad.status).toBe(401);
    expect(bad.body.detail).toMatchObject({ error_code: "auth", retryable: false });
    expect(JSON.stringify(bad.body)).not.toContain("sk-wrong-key-for-indexer");
    provider.reset();
    const good = await run({ records, fields: FIELDS.slice(0, 1) }, { "x-llm-api-key": CLIENT_KEY });
    expect(good.status).toBe(200);
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${CLIENT_KEY}`)).toBe(true);
    const logs = stack.processes.map((p) => p.output()).join("\n");
    for (const secret of [SERVER_KEY, CLIENT_KEY, "sk-wrong-key-for-indexer"]) expect(logs).not.toContain(secret);
  });

  it("answers within the run's time budget, marking unreached records not_processed", async () => {
    provider.setBehaviour({ latencyMs: 2_000 });
    const records = indexerRecords(6, { withAbstractOnly: true });
    const started = Date.now();
    const res = await run({ records, fields: FIELDS.slice(0, 1), max_workers: 1 });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(15_000);
    const statuses: string[] = res.body.results.map((r: { indexing_status: string }) => r.indexing_status);
    const ok = statuses.filter((s) => s === "ok").length;
    expect(ok).toBeGreaterThan(0);
    expect(statuses).toEqual([...Array(ok).fill("ok"), ...Array(6 - ok).fill("not_processed")]);
    expect(res.body.errors).toHaveLength(6 - ok);
    expect(res.body.errors[0]).toContain("/v1/indexer/jobs");
  });

  it("answers 429 rate_limit when the provider keeps rate-limiting", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 50 });
    const res = await run({ records: indexerRecords(2, { withAbstractOnly: true }), fields: FIELDS.slice(0, 1), max_workers: 1 });
    expect(res.status).toBe(429);
    expect(res.body.detail).toMatchObject({ error_code: "rate_limit", retryable: true });
  });

  it("estimates tokens from fields × records, close to what a run really uses", async () => {
    const records = indexerRecords(40, { withAbstractOnly: true });
    const fields = FIELDS.slice(0, 5);
    const estimate = await stack.http("POST", "/v1/indexer/estimate", { fields, record_count: records.length });
    expect(estimate.status).toBe(200);
    expect(IndexerEstimateResponse.safeParse(estimate.body).success).toBe(true);
    expect(estimate.body).toMatchObject({ confidence: "approximate", disclaimer: expect.stringContaining("30%") });
    const ran = await run({ records, fields });
    // The fake bills the prompt text only; the estimate adds a little for the schema. ±30% is the promise.
    const ratio = estimate.body.estimated_input_tokens / ran.body.usage.input_tokens;
    expect(ratio).toBeGreaterThan(0.7);
    expect(ratio).toBeLessThan(1.3);
    const bad = await stack.http("POST", "/v1/indexer/estimate", { fields: [], record_count: 3 });
    expect(bad.status).toBe(400);
  });

  it("suggest-fields: mock without the provider, live with llm-4.1, existing fields skipped", async () => {
    const mock = await stack.http("POST", "/v1/indexer/suggest-fields", { mock: true, existing_fields: ["population"] });
    expect(mock.status).toBe(200);
    expect(SuggestFieldsResponse.safeParse(mock.body).success).toBe(true);
    expect(mock.body.fields.map((f: IndexerField) => f.name)).not.toContain("population");
    expect(provider.chatRequests()).toHaveLength(0);

    provider.setBehaviour({
      respond: (request) =>
        schemaName(request) === "indexer_suggest_fields"
          ? {
              fields: [
                { name: "Population", description: "who", data_type_primary: "text", data_type_secondary: "NA", examples: [], examples_mode: "guide", depth: "full" },
                { name: "nudge_type", description: "kind of nudge", data_type_primary: "text", data_type_secondary: "NA", examples: ["reminder", "default"], examples_mode: "enum", depth: "minimal" },
                { name: "follow_up_months", description: "follow-up", data_type_primary: "number", data_type_secondary: "NA", examples: [], examples_mode: "guide", depth: "minimal" },
              ],
              warnings: [{ field: "follow_up_months", risk_level: "high", reason: "rarely in abstracts", suggested_fallback: "full text" }],
            }
          : undefined,
    });
    const live = await stack.http("POST", "/v1/indexer/suggest-fields", {
      project_context: { description: "Nudging healthcare professionals", research_questions: ["Do nudges change prescribing?"] },
      pico: { population: "clinicians" },
      sample_records: indexerRecords(2),
      existing_fields: ["population"],
    });
    expect(live.status).toBe(200);
    expect(live.body.fields.map((f: IndexerField) => f.name)).toEqual(["nudge_type", "follow_up_months"]);
    expect(live.body.warnings).toEqual([expect.objectContaining({ field: "follow_up_months", risk_level: "high" })]);
    const chat = bodyOf(provider.chatRequests()[0]!);
    expect(chat.model).toBe("gpt-4.1");
    expect(JSON.stringify(chat.messages)).toContain("Do nudges change prescribing?");
  });

  it("refine-fields: suggestions refer only to real input fields", async () => {
    const field = { name: "x", description: "d", data_type_primary: "text", data_type_secondary: "NA", examples: [], examples_mode: "guide", depth: "minimal" };
    provider.setBehaviour({
      respond: () => ({
        suggestions: [
          { action: "modify", field: { ...field, name: "design" }, rationale: "clearer", original_field_name: "Design", target_field_name: null },
          { action: "remove", field, rationale: "ghost", original_field_name: "not_a_field", target_field_name: null },
          { action: "merge", field: { ...field, name: "outcomes" }, rationale: "overlap", original_field_name: "figures", target_field_name: "outcomes" },
          { action: "add", field: { ...field, name: "country" }, rationale: "missing", original_field_name: null, target_field_name: null },
        ],
      }),
    });
    const res = await stack.http("POST", "/v1/indexer/refine-fields", { fields: FIELDS });
    expect(res.status).toBe(200);
    expect(RefineFieldsResponse.safeParse(res.body).success).toBe(true);
    const names = new Set(FIELDS.map((f) => f.name));
    expect(res.body.suggestions.map((s: { action: string }) => s.action)).toEqual(["modify", "merge", "add"]);
    for (const s of res.body.suggestions) {
      if (s.original_field_name !== undefined) expect(names.has(s.original_field_name)).toBe(true);
      if (s.target_field_name !== undefined) expect(names.has(s.target_field_name)).toBe(true);
    }
  });

  it("group-tags: every input value in exactly one group, with usage", async () => {
    const values = ["RCT", "cohort", "survey", "interviews", "RCT", "case series"];
    provider.setBehaviour({
      respond: () => ({ groups: [{ name: "Trials", rationale: "r", value_ids: [1] }, { name: "Observational", rationale: "r", value_ids: [2, 5, 1] }] }),
    });
    const res = await stack.http("POST", "/v1/indexer/group-tags", { field_name: "design", values, num_groups_hint: 3 });
    expect(res.status).toBe(200);
    expect(GroupTagsResponse.safeParse(res.body).success).toBe(true);
    const grouped = res.body.groups.flatMap((g: { values: string[] }) => g.values);
    expect(grouped.sort()).toEqual([...new Set(values)].sort());
    expect(res.body.groups.at(-1)).toMatchObject({ name: "Other", values: ["survey", "interviews"] });
    expect(res.body.usage).toMatchObject({ total_tokens: expect.any(Number), estimated_cost_usd: expect.any(Number) });
    expect(res.body.usage.total_tokens).toBeGreaterThan(0);
  });

  it("documents the evidence element in the OpenAPI document", async () => {
    const doc = await stack.http("GET", "/openapi.json");
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(["/v1/indexer/run", "/v1/indexer/jobs", "/v1/indexer/estimate"]));
    const text = JSON.stringify(doc.body);
    expect(text).toContain("source.slice(start, end) === quote");
    expect(text).toContain("verified against the record by the service");
  });

  it("lists its prompts and applies a prompt override from the config bucket", async () => {
    const prompts = await stack.http("GET", "/v1/config/prompts");
    const names = prompts.body.filter((p: { service: string }) => p.service === "indexer").map((p: { name: string }) => p.name);
    expect(names.sort()).toEqual(["indexer.extraction", "indexer.group_tags", "indexer.refine_fields", "indexer.suggest_fields"]);
    const config = await stack.http("GET", "/v1/config/services/extraction");
    expect(config.body).toMatchObject({ service_id: "extraction", model: "llm-5-mini" });

    const marker = "Custom extraction instructions from the config bucket";
    const put = await stack.http("PUT", "/v1/config/services/extraction", { extra: { prompts: { "indexer.extraction": marker } } });
    expect(put.status).toBe(200);
    const records = indexerRecords(1, { withAbstractOnly: true });
    await expectEventually(async () => {
      provider.reset();
      await run({ records, fields: FIELDS.slice(0, 1) });
      const system = bodyOf(provider.chatRequests()[0]!).messages[0]!.content as string;
      return system.includes(marker);
    });
    await stack.http("PUT", "/v1/config/services/extraction", { extra: { prompts: {} } });
    // The record is last in the prompt, after the stable prefix.
    expect(promptRecord(bodyOf(provider.chatRequests()[0]!))?.title).toBe(records[0]!.Title);
  });
});

async function expectEventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("condition not met in time");
}
