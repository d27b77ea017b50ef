import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLitrevClient, type LitrevClient } from "@litrev/client";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { indexerRecords } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";

/**
 * One whole flow per capability through the typed client (clients/typescript), against the real
 * gateway and services over a real nats-server. The client's types come from the checked-in
 * OpenAPI document, so a drift between that document and what the gateway answers breaks these
 * first: at compile time (paths, bodies, parameters) or here (statuses and bodies).
 */

const SERVER_KEY = "sk-client-flows-server";

describe("the typed client against the real stack", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let api: LitrevClient;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 0, respond: extractionResponder() });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2" },
    });
    api = createLitrevClient({ baseUrl: stack.baseUrl, apiKey: TEST_API_KEY });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("health: liveness without a key, and the documented 401 body with a wrong key", async () => {
    const anonymous = createLitrevClient({ baseUrl: stack.baseUrl, apiKey: "not-the-key" });
    const live = await anonymous.GET("/health");
    expect(live.response.status).toBe(200);
    expect(live.data).toEqual({ status: "ok" });

    const denied = await anonymous.GET("/v1/config/prompts");
    expect(denied.response.status).toBe(401);
    expect(denied.data).toBeUndefined();
    expect(denied.error).toEqual({ detail: { message: "Missing or invalid API key", error_code: "auth", error_reason: "auth", retryable: false } });
  });

  it("screening: creates a mock job, polls it to completed, and finds it gone from active-job", async () => {
    const papers = [
      { id: "p1", title: "Peer comparison letters and antibiotic prescribing", abstract: "A randomised trial of feedback letters to general practitioners." },
      { id: "p2", title: "Default options in electronic health records", abstract: "Changing the default reduced brand-name prescribing in two hospitals." },
      { id: "p3", title: "Cooking classes for adolescents", abstract: "A school programme on nutrition knowledge." },
    ];
    const created = await api.POST("/v1/screening/jobs", {
      body: { papers, criteria: [{ name: "Population", type: "include", value: "Physicians" }], repetitions: 2, project_id: 7101, mock: true },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    const { job_id } = created.data!;
    expect(created.data).toEqual({ job_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "pending", progress: 0, stage: "" });

    const final = await waitFor(async () => {
      const poll = await api.GET("/v1/screening/jobs/{job_id}", { params: { path: { job_id } } });
      expect(poll.response.status).toBe(200);
      return poll.data!.status === "completed" || poll.data!.status === "failed" ? poll.data : null;
    }, 60_000, 50);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.progress).toBe(1);
    expect(final.stage).toBe("Complete");
    expect(final.results!.map((r) => r.id).sort()).toEqual(["p1", "p2", "p3"]);
    expect(final.clusters!.length).toBeGreaterThan(0);
    expect(final.config).toMatchObject({ mock: true, repetitions: 2, papers_count: 3, criteria_count: 1 });
    // Each item carries what the document declares (typed, not `unknown`): a decision, one vote per repetition, a verdict per criterion.
    for (const item of final.results!) {
      expect(["include", "exclude"]).toContain(item.decision);
      expect(item.votes).toHaveLength(2);
      expect(item.decision).toBe(item.votes.filter((v) => v === "include").length >= 1 ? "include" : "exclude"); // threshold 1.0
      expect(item.criteria_verdicts).toEqual([
        { name: "Population", type: "include", verdict: expect.stringMatching(/^(met|not_met|unclear)$/), met: expect.any(Number), not_met: expect.any(Number), unclear: expect.any(Number) },
      ]);
      const [verdict] = item.criteria_verdicts;
      expect(verdict!.met + verdict!.not_met + verdict!.unclear).toBe(2);
    }

    const active = await api.GET("/v1/screening/active-job", { params: { query: { project_id: 7101 } } });
    expect(active.response.status).toBe(200);
    expect(active.data).toBeNull();

    const missing = await api.GET("/v1/screening/jobs/{job_id}", { params: { path: { job_id: "00000000-0000-4000-8000-000000000000" } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toEqual({ detail: "Job not found" });
  });

  it("indexer: a synchronous run and a job, both through the fake provider via the real openai SDK", async () => {
    const records = indexerRecords(3, { withAbstractOnly: true });
    const fields = [
      { name: "design", description: "Study design in a few words", data_type_primary: "text" as const },
      { name: "sample_size", description: "Number of participants", data_type_primary: "number" as const },
    ];
    const run = await api.POST("/v1/indexer/run", { body: { records, fields, mode: "test" } });
    expect(run.response.status, JSON.stringify(run.error)).toBe(200);
    expect(run.data!.results.map((r) => r.ID)).toEqual(records.map((r) => r.ID));
    expect(run.data!.results.every((r) => r.indexing_status === "ok")).toBe(true);
    expect(run.data!.usage.total_tokens).toBeGreaterThan(0);

    const created = await api.POST("/v1/indexer/jobs", { body: { records, fields, project_id: 7102 } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(200);
    expect(created.data).toMatchObject({ status: "pending", progress: 0 });
    const job_id = created.data!.job_id;
    const final = await waitFor(async () => {
      const poll = await api.GET("/v1/indexer/jobs/{job_id}", { params: { path: { job_id } } });
      expect(poll.response.status).toBe(200);
      return poll.data!.status === "completed" || poll.data!.status === "failed" ? poll.data : null;
    }, 60_000, 50);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.partial_results.map((r) => r.ID)).toEqual(records.map((r) => r.ID));

    const invalid = await api.POST("/v1/indexer/run", { body: { records, fields: [] } });
    expect(invalid.response.status).toBe(400);
    expect(invalid.error).toMatchObject({ detail: [{ loc: ["body", "fields"] }] });
  });

  it("criteria: mock calls, one sent with the key as a bearer token, never reaching the provider", async () => {
    const withKey = createLitrevClient({ baseUrl: stack.baseUrl, apiKey: TEST_API_KEY, bearer: true, providerKey: "sk-client-own" });
    const before = provider.requests.length;
    const analysed = await withKey.POST("/v1/criteria/analyze-question", {
      body: { research_question: "Do nudges change prescribing by physicians?", mock: true },
    });
    expect(analysed.response.status, JSON.stringify(analysed.error)).toBe(200);
    expect(analysed.data!.status).toBe("could_improve");
    expect(analysed.data!.suggestion).toMatch(/mock/i);

    const consolidated = await api.POST("/v1/criteria/consolidate", { body: { criteria: [{ text: "Physicians" }], mock: true } });
    expect(consolidated.response.status).toBe(200);
    expect(consolidated.data).toMatchObject({ duplicate_groups: [], consolidation_proposals: [] });
    expect(provider.requests.length, "mock mode never calls the provider").toBe(before);
  });

  it("configuration: reads, patches and reads back a service's config, and lists prompts", async () => {
    const prompts = await api.GET("/v1/config/prompts");
    expect(prompts.response.status).toBe(200);
    expect(new Set(prompts.data!.map((p) => p.service))).toEqual(new Set(["criteria", "screening", "indexer"]));

    const put = await api.PUT("/v1/config/services/{service_id}", { params: { path: { service_id: "criteria" } }, body: { temperature: 0.3 } });
    expect(put.response.status, JSON.stringify(put.error)).toBe(200);
    expect(put.data).toMatchObject({ service_id: "criteria", temperature: 0.3 });

    const read = await api.GET("/v1/config/services/{service_id}", { params: { path: { service_id: "criteria" } } });
    expect(read.data).toEqual(put.data);
    const all = await api.GET("/v1/config/services");
    expect(all.data!.find((c) => c.service_id === "criteria")).toEqual(put.data);

    const rejected = await api.PUT("/v1/config/services/{service_id}", { params: { path: { service_id: "criteria" } }, body: { temperature: 9 } });
    expect(rejected.response.status).toBe(400);
    expect(rejected.error).toMatchObject({ detail: [{ loc: ["body", "temperature"] }] });
  });
});
