import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { IndexerJob, type IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { indexerRecords } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { startStack, waitFor, type Stack } from "../support/stack";

const SERVER_KEY = "sk-indexer-jobs-server";
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];

describe("AutoIndexer jobs through the gateway (libs/jobs: work queue, live state, checkpoints)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 40 });
    stack = await startStack({
      services: { indexer: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        INDEXER_JOB_RECORD_CONCURRENCY: "2",
        LLM_MAX_ATTEMPTS: "2",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => {
    provider.reset();
    provider.setBehaviour({ mode: "normal", latencyMs: 40, respond: extractionResponder() });
  });

  const poll = (id: string) => stack.http("GET", `/v1/indexer/jobs/${id}`);

  it("creates a job that a poll finds at once, with partial results growing to every record", async () => {
    const records = indexerRecords(30, { withAbstractOnly: true });
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, project_id: 4242 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toEqual({ job_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "pending", progress: 0 });
    const id = created.body.job_id as string;

    const first = await poll(id);
    expect(first.status).toBe(200);
    expect(IndexerJob.safeParse(first.body).success).toBe(true);

    const seen: { progress: number; count: number; status: string }[] = [];
    let sawActive = false;
    const final = await waitFor(async () => {
      const res = await poll(id);
      expect(res.status).toBe(200);
      seen.push({ progress: res.body.progress, count: res.body.partial_results.length, status: res.body.status });
      if (res.body.status === "running" && !sawActive) {
        const active = await stack.http("GET", "/v1/indexer/active-job?project_id=4242");
        sawActive = active.body?.job_id === id;
      }
      return res.body.status === "completed" ? res.body : undefined;
    }, 60_000, 100);

    // Progress and partial results never go backwards, and grew while the job ran.
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]!.progress).toBeGreaterThanOrEqual(seen[i - 1]!.progress);
      expect(seen[i]!.count).toBeGreaterThanOrEqual(seen[i - 1]!.count);
    }
    expect(seen.some((s) => s.status === "running" && s.count > 0 && s.count < 30)).toBe(true);
    expect(sawActive).toBe(true);

    expect(final.progress).toBe(1);
    expect(final.partial_results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
    expect(final.partial_results.every((r: { indexing_status: string }) => r.indexing_status === "ok")).toBe(true);
    expect(final.usage).toMatchObject({ input_tokens: expect.any(Number), total_tokens: expect.any(Number), estimated_cost_usd: expect.any(Number) });
    expect(final.usage.total_tokens).toBeGreaterThan(0);
    expect(final.model_version).toBe("gpt-5-mini-2025-08-07");
    expect(final.estimated_cost_usd).toBeGreaterThan(0);
    expect(final.completed_at).toEqual(expect.any(String));
    expect(final.duration_ms).toBeGreaterThan(0);
    expect(provider.chatRequests()).toHaveLength(30);

    // Terminal: readable again and again (from the store of record once the first poll released it), not active.
    for (let i = 0; i < 3; i++) expect((await poll(id)).body).toEqual(final);
    expect((await stack.http("GET", "/v1/indexer/active-job?project_id=4242")).body).toBeNull();
    // Listed from the store of record (the embedded one: no MongoDB configured).
    const list = await stack.http("GET", "/v1/indexer/jobs?limit=5");
    expect(list.status).toBe(200);
    expect(list.body[0]).toMatchObject({ job_id: id, status: "completed", record_count: 30, model: "llm-5-mini" });
  });

  it("applies mode to jobs, and answers 404 and 400", async () => {
    const records = indexerRecords(25, { withAbstractOnly: true });
    const a = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, mode: "test" });
    const b = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, mode: "sample" });
    for (const [res, count] of [[a, 5], [b, 20]] as const) {
      const done = await waitFor(async () => ((await poll(res.body.job_id)).body.status === "completed" ? (await poll(res.body.job_id)).body : undefined), 60_000, 100);
      expect(done.partial_results).toHaveLength(count);
    }

    const missing = await poll("00000000-0000-4000-8000-000000000000");
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: "Job not found" });
    const bad = await stack.http("POST", "/v1/indexer/jobs", { records, fields: [FIELDS[0], FIELDS[0]] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail[0]).toMatchObject({ loc: ["body", "fields", 1, "name"] });
    const noId = await stack.http("POST", "/v1/indexer/jobs", { records: [{ Title: "t" }], fields: FIELDS });
    expect(noId.status).toBe(400);
  });

  it("fails the job (HTTP 200 on poll) with error_category auth for a rejected provider key, never echoing it", async () => {
    const secret = "sk-rejected-job-key-0123";
    const created = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(4, { withAbstractOnly: true }), fields: FIELDS }, { headers: { "x-llm-api-key": secret } });
    expect(created.status).toBe(200);
    const failed = await waitFor(async () => {
      const res = await poll(created.body.job_id);
      return res.body.status === "failed" ? res : undefined;
    }, 30_000, 100);
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ status: "failed", error_category: "auth", error_retryable: false, error: expect.any(String) });
    expect(provider.chatRequests().every((r) => r.headers.authorization === `Bearer ${secret}`)).toBe(true);
    expect(JSON.stringify(failed.body)).not.toContain(secret);
    const logs = stack.processes.map((p) => p.output()).join("\n");
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(SERVER_KEY);
  });
});
