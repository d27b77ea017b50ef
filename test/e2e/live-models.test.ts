import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { startStack, waitFor, type RunningProcess, type Stack } from "../support/stack";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * Models that change under a running stack (issue 13): the alias table and each service's model
 * live in the config bucket, so a PUT reaches every replica without a restart; a model the
 * provider lacks is a named 400 (a failed job in a job) and shows on /health/ready; a provider
 * stuck on 429 answers a synchronous call with the spec's 429 inside the short budget; every
 * service's prompts can be overridden through `extra.prompts`.
 */

const SERVER_KEY = "sk-live-models-e2e";
const bodyOf = (request: { body: unknown }) => request.body as FakeChatRequest;
const systemOf = (request: FakeChatRequest) => String(request.messages.find((m) => m.role === "system")?.content ?? "");

describe("live model configuration (2 screening replicas, criteria, real nats-server, fake provider)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 2, criteria: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        LLM_MODEL_CHECK_INTERVAL_MS: "1000",
        JOB_ACK_WAIT_MS: "5000",
        // Service models this suite sets by name (the allowlist, docs/security.md).
        ALLOWED_MODELS: "gpt-4.1-mini,gpt-4.1-nano",
        // A remap, and a non-mock job on a configured model, need the model's price (a 400 naming MODEL_PRICES otherwise).
        MODEL_PRICES: '{"gpt-5.1-nano":{"input":0.05,"output":0.4},"gpt-4.1-nano":{"input":0.1,"output":0.4}}',
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => provider.reset());

  const screeningReplicas = () => stack.processes.filter((p) => p.name === "screening");
  const jobsStarted = (replica: RunningProcess) => replica.output().split("\n").filter((l) => l.includes('"job started"')).length;
  const analyze = (body: Record<string, unknown> = {}) =>
    stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do reminders change prescribing?", ...body });

  async function screen(body: Record<string, unknown> = {}) {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, repetitions: 1, ...body });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 60_000, 50);
  }

  it("remaps llm-5-nano through PUT /v1/config/models: the next jobs on every replica use the new model, no restart", async () => {
    const before = await stack.http("GET", "/v1/config/models");
    expect(before.status).toBe(200);
    expect(before.body.aliases["llm-5-nano"]).toBe("gpt-5-nano");

    const [a, b] = screeningReplicas();
    const startedBefore = [jobsStarted(a!), jobsStarted(b!)];
    const put = await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "gpt-5.1-nano" } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ aliases: { "llm-5-nano": "gpt-5.1-nano" }, overrides: { "llm-5-nano": "gpt-5.1-nano" } });
    expect(put.body.defaults["llm-5-nano"]).toBe("gpt-5-nano");
    // The alias table lives in the config bucket too, but is no service: the listing stays the services'.
    const ids = (await stack.http("GET", "/v1/config/services")).body.map((c: { service_id: string }) => c.service_id);
    expect(ids).not.toContain("defaults");
    expect(ids).not.toContain("overrides");

    // Jobs until both replicas have run at least one (bounded): every provider call uses the new model.
    for (let round = 0; round < 8; round++) {
      const finals = await Promise.all([screen(), screen()]);
      for (const final of finals) expect(final.status, JSON.stringify(final.error)).toBe("completed");
      if (jobsStarted(a!) > startedBefore[0]! && jobsStarted(b!) > startedBefore[1]!) break;
    }
    expect(jobsStarted(a!)).toBeGreaterThan(startedBefore[0]!);
    expect(jobsStarted(b!)).toBeGreaterThan(startedBefore[1]!);
    const models = new Set(provider.chatRequests().map((r) => bodyOf(r).model));
    expect([...models]).toEqual(["gpt-5.1-nano"]);
    for (const replica of [a!, b!]) {
      expect(replica.output()).toContain('"llm-5-nano":"gpt-5.1-nano"');
      // No restart: each replica started once and is still the same process.
      expect(replica.output().split('"service ready"').length - 1).toBe(1);
      expect(replica.child.exitCode).toBeNull();
    }
    // A malformed table is refused at the edge with the field-level body.
    const bad = await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "" } });
    expect(bad.status).toBe(400);
    expect(bad.body.detail[0].loc).toEqual(["body", "aliases", "llm-5-nano"]);

    // Dropping the override goes back to the default.
    const reset = await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": null } });
    expect(reset.body.aliases["llm-5-nano"]).toBe("gpt-5-nano");
    provider.reset();
    expect((await screen()).status).toBe("completed");
    expect(new Set(provider.chatRequests().map((r) => bodyOf(r).model))).toEqual(new Set(["gpt-5-nano"]));
  });

  it("a PUT of a service's model changes what a request without model uses; an explicit model still wins", async () => {
    expect((await analyze()).status).toBe(200);
    expect(bodyOf(provider.chatRequests().at(-1)!).model).toBe("gpt-5-mini"); // analyze-question's spec default

    await stack.http("PUT", "/v1/config/services/criteria", { model: "gpt-4.1-mini" });
    await waitFor(async () => {
      await analyze();
      return bodyOf(provider.chatRequests().at(-1)!).model === "gpt-4.1-mini";
    }, 10_000, 100);
    expect((await analyze({ model: "llm-5-nano" })).status).toBe(200);
    expect(bodyOf(provider.chatRequests().at(-1)!).model).toBe("gpt-5-nano");
    await stack.http("PUT", "/v1/config/services/criteria", { model: "llm-4.1" });

    // A screening job without model follows the screening service's model, and reports it.
    await stack.http("PUT", "/v1/config/services/screening", { model: "gpt-4.1-nano" });
    await new Promise((r) => setTimeout(r, 300));
    provider.reset();
    const final = await screen();
    expect(final.status).toBe("completed");
    expect(final.model_version).toBe("gpt-4.1-nano");
    expect(new Set(provider.chatRequests().map((r) => bodyOf(r).model))).toEqual(new Set(["gpt-4.1-nano"]));
    await stack.http("PUT", "/v1/config/services/screening", { model: "llm-5-nano" });
  });

  it("a model the provider lacks: 400 validation naming it, a failed job with validation, and /health/ready names it", async () => {
    provider.setBehaviour({ knownModels: ["gpt-5-mini", "gpt-4.1"] });
    const sync = await analyze({ model: "llm-5-nano" });
    expect(sync.status).toBe(400);
    expect(sync.body.detail.error_code).toBe("validation");
    expect(sync.body.detail.message).toContain("'gpt-5-nano' (alias 'llm-5-nano')");
    expect(sync.body.detail.message).toContain("PUT /v1/config/models");

    const job = await screen();
    expect(job.status).toBe("failed");
    expect(job.error_category).toBe("validation");
    expect(job.error).toContain("gpt-5-nano");

    const ready = await waitFor(async () => {
      const res = await stack.http("GET", "/health/ready", undefined, { auth: false });
      return typeof res.body.checks.models === "string" && res.body.checks.models.includes("missing") ? res : null;
    }, 15_000, 200);
    expect(ready.body.checks.models).toContain("gpt-5-nano (llm-5-nano)");
    expect(ready.body.checks.models).toContain("(screening)");

    provider.setBehaviour({ knownModels: undefined });
    await waitFor(async () => (await stack.http("GET", "/health/ready", undefined, { auth: false })).body.checks.models === "ok", 15_000, 200);
  });

  it("a provider stuck on 429: the spec's 429 with Retry-After within the synchronous budget", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 4_000 });
    const started = Date.now();
    const res = await analyze();
    const elapsed = Date.now() - started;
    provider.setBehaviour({ mode: "normal" });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ detail: { message: expect.any(String), error_code: "rate_limit", error_reason: "rate_limit", retryable: true } });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Default synchronous budget 15 s (LLM_SYNC_DEADLINE_MS): well under the 120 s job budget.
    expect(elapsed).toBeLessThan(16_000);
    expect(provider.chatRequests().length).toBeGreaterThanOrEqual(2);
  });

  it("criteria and screening prompts are overridable through extra.prompts (criteria: no leading blank line)", async () => {
    const marker = "Custom question-analysis rules from the config bucket.";
    await stack.http("PUT", "/v1/config/services/criteria", { system_prompt: "", extra: { prompts: { "criteria.question_analysis": marker } } });
    await waitFor(async () => {
      provider.reset();
      await analyze();
      return systemOf(bodyOf(provider.chatRequests()[0]!)).includes(marker);
    }, 10_000, 100);
    const system = systemOf(bodyOf(provider.chatRequests()[0]!));
    expect(system.startsWith("You are an expert methodologist")).toBe(true); // blank system_prompt → built-in preamble
    expect(system).toMatch(/\n\nCustom question-analysis rules/);
    await stack.http("PUT", "/v1/config/services/criteria", { extra: { prompts: {} } });

    const stageMarker = "Custom labelling rules from the config bucket.";
    await stack.http("PUT", "/v1/config/services/screening", { extra: { prompts: { "screening.labelling": stageMarker } } });
    await new Promise((r) => setTimeout(r, 300));
    provider.reset();
    expect((await screen()).status).toBe("completed");
    const chats = provider.chatRequests().map(bodyOf);
    const labelling = chats.filter((c) => schemaNameOf(c).startsWith("screening_labels_"));
    expect(labelling.length).toBeGreaterThan(0);
    for (const chat of labelling) expect(systemOf(chat)).toContain(stageMarker);
    for (const chat of chats.filter((c) => !schemaNameOf(c).startsWith("screening_labels_"))) expect(systemOf(chat)).not.toContain(stageMarker);
    await stack.http("PUT", "/v1/config/services/screening", { extra: { prompts: {} } });
  });
});
