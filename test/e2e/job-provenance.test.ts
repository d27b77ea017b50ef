import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { IndexerJob, ScreeningJob, type IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeChatRequest, type FakeProvider, type RespondContext } from "@litrev/llm/testing";
import { promptPapers } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * Jobs a review team can report (issue 19): the model is pinned at admission (a remap while a job
 * runs does not move it), every job records its provenance, usage and actual cost, live and in the
 * store of record, and papers the model keeps losing go to a human instead of failing the job.
 */

const SERVER_KEY = "sk-provenance-e2e";
const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
const bodyOf = (request: { body: unknown }) => request.body as FakeChatRequest;
const systemOf = (request: FakeChatRequest) => String(request.messages.find((m) => m.role === "system")?.content ?? "");
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The screening responder, except that papers whose title starts with `LOST` get an id the prompt never had. */
function losingResponder(lost: (title: string) => boolean) {
  const base = screeningResponder();
  return (request: FakeChatRequest, context: RespondContext): unknown => {
    const reply = base(request, context);
    if (!schemaNameOf(request).startsWith("screening_labels_")) return reply;
    const papers = promptPapers(request);
    const decisions = (reply as { decisions: { id: string }[] }).decisions.map((d, i) => (lost(papers[i]?.title ?? "") ? { ...d, id: `q${900 + i}` } : d));
    return { decisions };
  };
}

describe("job provenance, usage and lost papers (screening + indexer, real nats-server, fake provider honouring n)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY] });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        LLM_CONCURRENCY: "2",
        SCREENING_CALL_CONCURRENCY: "2",
        SCREENING_LABEL_BATCH: "5",
        INDEXER_JOB_RECORD_CONCURRENCY: "2",
        SERVICE_COMMIT: "0123456789abcdef0123456789abcdef01234567",
        // A remap needs its target's price (a 400 naming MODEL_PRICES otherwise).
        MODEL_PRICES: '{"gpt-4.1-nano":{"input":0.1,"output":0.4}}',
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => {
    provider.reset();
    provider.setBehaviour({ latencyMs: 0, respond: screeningResponder() });
  });

  const poll = (kind: "screening" | "indexer", id: string) => stack.http("GET", `/v1/${kind}/jobs/${id}`);
  const finished = (kind: "screening" | "indexer", id: string) =>
    waitFor(async () => {
      const res = await poll(kind, id);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 90_000, 50);

  it("pins the model at creation: a remap while the job runs moves none of its calls, and provenance, usage and cost say so", async () => {
    provider.setBehaviour({ latencyMs: 150, respond: screeningResponder() });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(30), criteria: CRITERIA, repetitions: 3 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    await waitFor(() => provider.chatRequests().some((r) => r.status === 200), 30_000, 20);

    const put = await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "gpt-4.1-nano" } });
    expect(put.status).toBe(200);
    try {
      // While it runs, the gateway's mirror serves the poll: cost so far and provenance travel in the live state.
      const running = await waitFor(async () => {
        const res = await poll("screening", id);
        return res.body.status === "running" && res.body.actual_cost_usd > 0 ? res.body : res.body.status === "completed" ? "too late" : null;
      }, 30_000, 20);
      expect(running, "the job ended before a running poll showed its cost").not.toBe("too late");
      expect(ScreeningJob.parse(running)).toMatchObject({ provenance: { model_resolved: "gpt-5-nano" }, usage: { calls: expect.any(Number) } });

      const final = await finished("screening", id);
      expect(final.status, final.error ?? "").toBe("completed");
      const calls = provider.chatRequests().filter((r) => r.status === 200);
      expect(new Set(calls.map((r) => bodyOf(r).model))).toEqual(new Set(["gpt-5-nano"]));
      expect(calls.map((r) => bodyOf(r).n ?? 1).some((n) => n > 1)).toBe(true); // the provider honours n

      // Read back from the store of record (the first poll released the live entry).
      const stored = ScreeningJob.parse((await poll("screening", id)).body);
      expect(stored.model_version).toBe("llm-5-nano");
      expect(stored.provenance).toMatchObject({
        model_requested: "llm-5-nano",
        model_resolved: "gpt-5-nano",
        models_used: [{ model: "gpt-5-nano-2025-08-07", calls: calls.length }],
        service_version: { commit: "0123456789abcdef0123456789abcdef01234567" },
        provider: { host: new URL(provider.url).host, profile: "openai-compatible" },
        repetitions: 3,
        threshold: 1,
      });
      expect(stored.provenance!.decision_rule).toMatch(/at least 1 of 3/);
      expect(stored.provenance!.parameters.labelling).toEqual({ temperature: null, max_output_tokens: 4096, reasoning_effort: "minimal" });
      // The labelling prompt's hash is the hash of the exact system text sent (no paper data in it).
      const labellingSystem = systemOf(bodyOf(calls.find((r) => schemaNameOf(bodyOf(r)).startsWith("screening_labels_"))!));
      const labelling = stored.provenance!.prompts.find((p) => p.name === "screening.labelling");
      expect(labelling?.sha256).toBe(sha256(labellingSystem));
      // The whole text is recorded too, so that anyone can check the hash (issue 28), with what the job was asked.
      expect(labelling?.text).toBe(labellingSystem);
      for (const prompt of stored.provenance!.prompts) expect(sha256(prompt.text!)).toBe(prompt.sha256);
      expect(stored.provenance!.criteria).toEqual(CRITERIA.map((c) => ({ name: c.name, type: c.type, text: c.value })));
      expect(stored.provenance!.questions).toEqual([]);
      expect(stored.usage).toMatchObject({ calls: calls.length, retries: 0 });
      expect(stored.usage.input_tokens).toBeGreaterThan(0);
      expect(stored.actual_cost_usd).toBeGreaterThan(0);
      expect(stored.actual_cost_usd).toBe(stored.usage.estimated_cost_usd);

      // A job created after the remap uses the new model.
      provider.reset();
      provider.setBehaviour({ latencyMs: 0, respond: screeningResponder() });
      const next = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 1 });
      const after = await finished("screening", next.body.job_id);
      expect(after.provenance.model_resolved).toBe("gpt-4.1-nano");
      expect(new Set(provider.chatRequests().map((r) => bodyOf(r).model))).toEqual(new Set(["gpt-4.1-nano"]));
    } finally {
      await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": null } });
    }
  });

  it("a pinned model the provider stops offering mid-job fails the job with a reason naming it", async () => {
    provider.setBehaviour({ latencyMs: 100, respond: screeningResponder() });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(20), criteria: CRITERIA, repetitions: 2 });
    await waitFor(() => provider.chatRequests().some((r) => r.status === 200), 30_000, 20);
    provider.setBehaviour({ knownModels: ["gpt-4.1"] });
    const final = await finished("screening", created.body.job_id);
    expect(final).toMatchObject({ status: "failed", error_category: "validation" });
    expect(final.error).toContain("no longer offers the model 'gpt-5-nano' that this job was pinned to at creation (alias 'llm-5-nano')");
    expect(final.provenance.models_used[0].model).toBe("gpt-5-nano-2025-08-07");
    provider.setBehaviour({ knownModels: undefined });
  });

  it("a model that always loses 2 of 12 papers: the job completes with 12 results, exactly those 2 flagged for a human", async () => {
    provider.setBehaviour({ respond: losingResponder((title) => title.startsWith("LOST")) });
    const papers = screeningPapers(12).map((p, i) => (i === 4 || i === 9 ? { ...p, title: `LOST ${p.title}` } : p));
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 3 });
    const final = await finished("screening", created.body.job_id);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.results).toHaveLength(12);
    const flagged = (final.results as { id: string; error?: string; decision: string; final_score: number | null }[]).filter((r) => r.error);
    expect(flagged.map((r) => r.id)).toEqual([papers[4]!.id, papers[9]!.id]);
    for (const r of flagged) {
      expect(r.error!.length).toBeGreaterThan(0);
      expect(r).toMatchObject({ decision: "include", final_score: null });
    }
    // Each lost paper was asked about alone before it was given up.
    const solo = provider.chatRequests().filter((r) => schemaNameOf(bodyOf(r)) === `screening_labels_1x${CRITERIA.length}`);
    expect(new Set(solo.map((r) => promptPapers(bodyOf(r))[0]!.title))).toEqual(new Set([papers[4]!.title, papers[9]!.title]));
  });

  it("a model that loses every paper: the job fails, its error naming the model, how many papers and what it returned, never `unknown`", async () => {
    provider.setBehaviour({ respond: losingResponder(() => true) });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(12), criteria: CRITERIA, repetitions: 2 });
    const final = await finished("screening", created.body.job_id);
    expect(final.status).toBe("failed");
    expect(final).toMatchObject({ error_category: "unknown", error_reason: "model_output" });
    expect(final.error).toMatch(/The model 'gpt-5-nano-2025-08-07' lost \d+ of 12 papers, more than the 25% MAX_LOST_PAPER_SHARE allows/);
    expect(final.error).toMatch(/named \d+ ids that were not asked about \(e\.g\. "q900"/);
    expect(final.error).not.toMatch(/Unexpected server error/);
    // The failed job keeps what it spent.
    expect(final.actual_cost_usd).toBeGreaterThan(0);
    // What finished is exportable, marked partial (issue 28): here the papers the model lost, each with its error and title.
    const res = await fetch(`${stack.baseUrl}/v1/screening/jobs/${created.body.job_id}/export?format=jsonl`, { headers: { authorization: "Bearer test-service-key-0123456789" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-litrev-partial")).toBe("true");
    expect(res.headers.get("content-disposition")).toContain(`screening-${created.body.job_id}-partial.jsonl`);
    const lines = (await res.text()).trimEnd().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { id: string; title: string; error?: string });
    const report = (await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}/report?format=json`)).body as { outcomes: { items: number }; prisma: { records_in: number; results: number } };
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBe(report.outcomes.items);
    expect(report.prisma).toMatchObject({ records_in: 12, results: lines.length });
    for (const line of lines) {
      expect(line.title.length).toBeGreaterThan(0);
      expect(line.error).toBeTruthy();
    }
  });

  it("a mock job names no provider and no dollar cost", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, mock: true });
    const final = ScreeningJob.parse(await finished("screening", created.body.job_id));
    expect(final.provenance).toMatchObject({ provider: { host: null, profile: "mock" }, models_used: [], prompts: [] });
    expect(final.actual_cost_usd).toBeNull();
  });

  it("an indexer job records the same: provenance, usage with calls, and actual cost, live and in the store", async () => {
    provider.setBehaviour({ latencyMs: 100, respond: extractionResponder() });
    const records = indexerRecords(8, { withAbstractOnly: true });
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    const running = await waitFor(async () => {
      const res = await poll("indexer", id);
      return res.body.actual_cost_usd > 0 || res.body.status === "completed" ? res.body : null;
    }, 30_000, 20);
    expect(running.provenance.model_resolved).toBe("gpt-5-mini");

    const final = await finished("indexer", id);
    expect(final.status, final.error ?? "").toBe("completed");
    const stored = IndexerJob.parse((await poll("indexer", id)).body);
    const calls = provider.chatRequests().filter((r) => r.status === 200);
    expect(stored.provenance).toMatchObject({
      model_requested: "llm-5-mini",
      model_resolved: "gpt-5-mini",
      models_used: [{ model: "gpt-5-mini-2025-08-07", calls: calls.length }],
      repetitions: null,
      threshold: null,
    });
    const extraction = stored.provenance!.prompts.find((p) => p.name === "indexer.extraction");
    expect(extraction?.sha256).toBe(sha256(systemOf(bodyOf(calls[0]!))));
    expect(extraction?.text).toBe(systemOf(bodyOf(calls[0]!)));
    for (const prompt of stored.provenance!.prompts) expect(sha256(prompt.text!)).toBe(prompt.sha256);
    expect(stored.provenance!.fields).toEqual(FIELDS);
    expect(stored.usage).toMatchObject({ calls: calls.length, retries: 0 });
    expect(stored.actual_cost_usd).toBeGreaterThan(0);
  });
});
