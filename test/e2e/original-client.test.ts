import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { IndexerJob, operations, ScreeningJob, type IndexerField, type Operation } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, TEST_API_KEY, waitFor, type HttpResult, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * The original system's own client (a PHP/Laravel application), played against real processes
 * and a real nats-server (issue 34): it sends each tenant's provider key as `X-OpenAI-API-Key`,
 * runs its CI in mock mode on every mutating AI endpoint, routes on the spec's `error_code` /
 * `error_category` values, and sends numbers and booleans as PHP often does, as strings.
 * The deployment has NO provider key of its own: whatever reaches the provider is the tenant's.
 */
const TENANT_KEY = "sk-tenant-acme-0123456789";
const REVOKED_KEY = "sk-tenant-revoked-9876543210";
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];
/** The spec's taxonomy (service-spec.md, Errors), written out: what the client's routing knows. */
const SPEC_CODES: readonly string[] = ["validation", "auth", "rate_limit", "unknown", "orphan_cleanup"];
const tenant = { headers: { "x-openai-api-key": TENANT_KEY } };

describe("the original system's client, unchanged", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [TENANT_KEY], latencyMs: 5 });
    stack = await startStack({
      services: { criteria: 1, indexer: 1, screening: 1 },
      env: { OPENAI_API_KEY: undefined, OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2", LLM_SYNC_DEADLINE_MS: "3000" },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => {
    provider.reset();
    provider.setBehaviour({ mode: "normal", latencyMs: 5, respond: extractionResponder() });
  });

  /** A job's poll once it has ended. */
  const finished = (kind: "screening" | "indexer", id: string) =>
    waitFor(async () => {
      const res = await stack.http("GET", `/v1/${kind}/jobs/${id}`);
      return res.body?.status === "completed" || res.body?.status === "failed" ? res : undefined;
    }, 60_000, 100);

  /** A classified error body as the client routes on it: the spec's code, and the finer reason beside it. */
  const expectSpecError = (res: HttpResult, code: string) => {
    expect(res.body.detail, JSON.stringify(res.body)).toMatchObject({ error_code: code, error_reason: expect.any(String), retryable: expect.any(Boolean) });
    expect(SPEC_CODES).toContain(res.body.detail.error_code);
  };

  it("sends the tenant's key as X-OpenAI-API-Key: it reaches the provider, on synchronous routes and in jobs", async () => {
    const sync = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Does exercise reduce depression in older adults?" }, tenant);
    expect(sync.status, JSON.stringify(sync.body)).toBe(200);
    expect(provider.chatRequests().length).toBeGreaterThan(0);
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${TENANT_KEY}`)).toBe(true);

    provider.reset();
    const created = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(3, { withAbstractOnly: true }), fields: FIELDS }, tenant);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const job = await finished("indexer", created.body.job_id);
    expect(job.body).toMatchObject({ status: "completed", error_category: null });
    expect(provider.chatRequests()).toHaveLength(3);
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${TENANT_KEY}`)).toBe(true);
    // Never echoed, never logged.
    expect(JSON.stringify(job.body)).not.toContain(TENANT_KEY);
    expect(stack.processes.map((p) => p.output()).join("\n")).not.toContain(TENANT_KEY);
  });

  it("fails the job of a revoked tenant key with auth, and answers a rate-limited one with 429 rate_limit", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, repetitions: "1" }, { headers: { "x-openai-api-key": REVOKED_KEY } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const job = await finished("screening", created.body.job_id);
    expect(job.body).toMatchObject({ status: "failed", error_category: "auth", error_reason: "auth", error_retryable: false });
    expect(provider.chatRequests().length).toBeGreaterThan(0);
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${REVOKED_KEY}`)).toBe(true);

    provider.reset();
    provider.setBehaviour({ mode: "always429", retryAfterMs: 100 });
    const limited = await stack.http("POST", "/v1/indexer/group-tags", { field_name: "design", values: ["RCT", "cohort"] }, tenant);
    expect(limited.status, JSON.stringify(limited.body)).toBe(429);
    expectSpecError(limited, "rate_limit");
    expect(limited.body.detail.retryable).toBe(true);
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${TENANT_KEY}`)).toBe(true);
  });

  it("refuses two different provider keys with 400 naming both headers", async () => {
    const both = await stack.http("POST", "/v1/criteria/picos", { project_description: "Exercise for depression" }, {
      headers: { "x-openai-api-key": TENANT_KEY, "x-llm-api-key": REVOKED_KEY },
    });
    expect(both.status).toBe(400);
    expect(both.body.detail).toMatch(/X-LLM-API-Key.*X-OpenAI-API-Key/);
    expect(provider.chatRequests()).toHaveLength(0);
  });

  it("runs its CI in mock mode on all 12 mutating AI endpoints: schema-valid placeholders, 0 provider calls, no key", async () => {
    const records = indexerRecords(4, { withAbstractOnly: true });
    // As a PHP client may send them: booleans and numbers as strings.
    const mock = "true";
    const sync: [string, Operation, unknown][] = [
      ["/v1/criteria/analyze-question", operations.analyzeQuestion, { research_question: "Does exercise help?", mock }],
      ["/v1/criteria/generate", operations.generateCriteria, { project_description: "Exercise for depression", mock }],
      ["/v1/criteria/picos", operations.picos, { project_description: "Exercise for depression", mock }],
      ["/v1/criteria/refine-context", operations.refineContext, { description: "Exercise for depression", mock }],
      ["/v1/criteria/refine", operations.refineCriteria, { current_criteria: [{ text: "Adults" }], mock }],
      ["/v1/criteria/consolidate", operations.consolidate, { criteria: [{ id: 1, text: "Adults" }], mock }],
      ["/v1/indexer/run", operations.indexerRun, { records, fields: FIELDS, max_workers: "2", mock }],
      ["/v1/indexer/suggest-fields", operations.suggestFields, { mock }],
      ["/v1/indexer/refine-fields", operations.refineFields, { fields: FIELDS, mock }],
      ["/v1/indexer/group-tags", operations.groupTags, { field_name: "design", values: ["RCT", "cohort", "survey"], num_groups_hint: "2", mock }],
    ];
    for (const [path, operation, body] of sync) {
      const res = await stack.http("POST", path, body);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(operation.response.safeParse(res.body).success, path).toBe(true);
      expect(JSON.stringify(res.body), path).toMatch(/placeholder|mock/i);
    }

    const screening = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: "2", project_id: "34", mock });
    const indexer = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, max_estimated_cost_usd: "0.000001", mock });
    for (const created of [screening, indexer]) expect(created.status, JSON.stringify(created.body)).toBe(200);
    const screened = await finished("screening", screening.body.job_id);
    expect(screened.body).toMatchObject({ status: "completed", config: { mock: true, repetitions: 2 } });
    expect(ScreeningJob.safeParse(screened.body).success).toBe(true);
    const indexed = await finished("indexer", indexer.body.job_id);
    expect(indexed.body, JSON.stringify(indexed.body)).toMatchObject({ status: "completed", progress: 1, actual_cost_usd: null, usage: { total_tokens: 0 } });
    expect(IndexerJob.safeParse(indexed.body).success).toBe(true);
    expect(indexed.body.partial_results.map((r: { ID: unknown }) => r.ID)).toEqual(records.map((r) => r.ID));
    expect(indexed.body.partial_results[0].design.value).toMatch(/Placeholder/);
    // The same job machinery: listed, and exported.
    const listed = await stack.http("GET", "/v1/indexer/jobs?limit=5");
    expect(listed.body.map((j: { job_id: string }) => j.job_id)).toContain(indexer.body.job_id);
    const exported = await fetch(`${stack.baseUrl}/v1/indexer/jobs/${indexer.body.job_id}/export?format=jsonl`, { headers: { "x-api-key": TEST_API_KEY } });
    expect(exported.status).toBe(200);
    expect((await exported.text()).trim().split("\n")).toHaveLength(records.length);

    expect(provider.chatRequests()).toHaveLength(0);
  });

  it("routes on the spec's taxonomy only, refuses what no lax reading fixes, and sends a browser at / to the docs", async () => {
    const noKey = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "q", mock: true }, { auth: false });
    expect(noKey.status).toBe(401);
    expectSpecError(noKey, "auth");
    // A live request with neither a tenant key nor a server key: the spec's auth.
    const unkeyed = await stack.http("POST", "/v1/indexer/refine-fields", { fields: FIELDS });
    expect(unkeyed.status).toBe(401);
    expectSpecError(unkeyed, "auth");

    const bad = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(1), repetitions: "five", mock: "maybe" });
    expect(bad.status).toBe(400);
    expect(bad.body.detail.map((i: { loc: unknown[] }) => i.loc)).toEqual([
      ["body", "repetitions"],
      ["body", "mock"],
    ]);

    const root = await fetch(`${stack.baseUrl}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/docs");
  });
});
