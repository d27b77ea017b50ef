import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { LlmClient, type LlmClientOptions } from "./client";
import { LlmAbortError } from "./errors";
import { loadModelAliases } from "./models";
import { PRICES, estimateTokens } from "./pricing";
import { toStrictJsonSchema } from "./schema";
import { PROVIDER_PROFILES, startFakeProvider, type FakeChatRequest, type FakeProvider } from "./testing";
import { failure } from "../../../test/support/errors";

const Decision = z.object({
  decision: z.enum(["include", "exclude", "uncertain"]),
  confidence: z.number().min(0).max(1),
  reasons: z.array(z.string()).min(1),
  note: z.string().optional(),
});

const KEY = "sk-test-default-key-0001";
const OTHER_KEY = "sk-test-second-key-0002";
const ALIASES = loadModelAliases({});

let provider: FakeProvider;

beforeAll(async () => {
  provider = await startFakeProvider({ validKeys: [KEY, OTHER_KEY] });
});
afterAll(async () => {
  await provider.close();
});
afterEach(() => {
  provider.reset();
  vi.unstubAllEnvs();
});

function client(options: LlmClientOptions = {}): LlmClient {
  return new LlmClient({ apiKey: KEY, baseURL: provider.url, modelAliases: ALIASES, baseDelayMs: 5, maxDelayMs: 20, ...options });
}

const request = {
  model: "llm-5-nano",
  schema: Decision,
  schemaName: "screening_decision",
  system: "You screen studies for a systematic review.",
  user: "Title: A randomised trial of X.",
};

function sentBodies(): FakeChatRequest[] {
  return provider.chatRequests().map((r) => r.body as FakeChatRequest);
}

describe("LlmClient.structured", () => {
  it("sends a strict json_schema request and returns the validated reply", async () => {
    provider.setBehaviour({ fields: { decision: "exclude", confidence: 0.25 } });
    const result = await client().structured(request);

    const [body] = sentBodies();
    expect(body?.model).toBe("gpt-5-nano");
    expect(body?.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "screening_decision", strict: true, schema: toStrictJsonSchema(Decision) },
    });
    expect(body?.messages).toEqual([
      { role: "system", content: request.system },
      { role: "user", content: request.user },
    ]);
    expect(result.data).toMatchObject({ decision: "exclude", confidence: 0.25 });
    expect(Decision.parse(result.data)).toEqual(result.data);
    expect(result.choices).toEqual([result.data]);
    expect(result.modelVersion).toBe("gpt-5-nano-2025-08-07");
  });

  it("applies model-family quirks: no temperature for GPT-5, temperature and max_tokens for gpt-4.1", async () => {
    const llm = client();
    await llm.structured({ ...request, temperature: 0, maxOutputTokens: 400, reasoningEffort: "minimal" });
    await llm.structured({ ...request, model: "llm-4.1", temperature: 0, maxOutputTokens: 400, reasoningEffort: "minimal" });
    const [nano, large] = sentBodies();
    expect(nano).not.toHaveProperty("temperature");
    expect(nano).toMatchObject({ max_completion_tokens: 400, reasoning_effort: "minimal" });
    expect(nano).not.toHaveProperty("max_tokens");
    expect(large).toMatchObject({ model: "gpt-4.1", temperature: 0, max_tokens: 400 });
    expect(large).not.toHaveProperty("reasoning_effort");
  });

  it("computes usage and cost from the provider's counts and the price table", async () => {
    const result = await client().structured({ ...request, reasoningEffort: "low" });
    const nano = PRICES["gpt-5-nano"]!;
    const { usage } = result;
    expect(usage.input_tokens).toBe(estimateTokens(`${request.system}\n${request.user}`));
    expect(usage).toMatchObject({ calls: 1, retries: 0, models: { [result.modelVersion]: 1 } });
    expect(usage.cost_usd).toBeCloseTo((usage.input_tokens * nano.input + usage.output_tokens * nano.output) / 1e6, 15);

    // A long fixed system prompt is cached from the second call on, and the cached part is cheaper.
    const long = { ...request, system: "Criterion: adults with condition X. ".repeat(150) };
    const llm = client();
    const first = await llm.structured(long);
    const second = await llm.structured(long);
    expect(first.usage.cached_input_tokens).toBe(0);
    expect(second.usage.cached_input_tokens).toBeGreaterThan(0);
    const cached = second.usage.cached_input_tokens;
    expect(second.usage.cost_usd).toBeCloseTo(
      ((second.usage.input_tokens - cached) * nano.input + cached * nano.cachedInput + second.usage.output_tokens * nano.output) / 1e6,
      15,
    );
    expect(second.usage.cost_usd).toBeLessThan(first.usage.cost_usd);
  });

  it("returns every valid choice when n > 1", async () => {
    provider.setBehaviour({ respond: (_r, { choice, generated }) => ({ ...(generated as object), confidence: choice / 10 }) });
    const result = await client().structured({ ...request, n: 3 });
    expect(sentBodies()[0]?.n).toBe(3);
    expect(result.choices.map((c) => c.confidence)).toEqual([0, 0.1, 0.2]);
    expect(result.data).toEqual(result.choices[0]);
  });

  it("learns that a server ignores n (Ollama: one choice), or takes it as declared (LLM_PROVIDER_N)", async () => {
    const ollama = await startFakeProvider({ profile: "ollama" });
    try {
      const options = { apiKey: "ollama", baseURL: ollama.baseUrl("ollama"), modelAliases: { ...PROVIDER_PROFILES.ollama.aliases } };
      const learning = new LlmClient(options);
      expect(learning.ignoresN).toBe(false);
      await learning.structured(request);
      expect(learning.ignoresN).toBe(false); // n = 1 shows nothing
      const reply = await learning.structured({ ...request, n: 3 });
      expect(reply.choices).toHaveLength(1);
      expect(learning.ignoresN).toBe(true);

      ollama.reset();
      const declared = new LlmClient({ ...options, providerN: "ignored" });
      expect(declared.ignoresN).toBe(true);
      await declared.structured({ ...request, n: 3 });
      expect((ollama.chatRequests()[0]!.body as FakeChatRequest).n).toBeUndefined(); // never asked for more than one
      expect(new LlmClient({ ...options, providerN: "honoured" }).ignoresN).toBe(false);
    } finally {
      await ollama.close();
    }
    // A server that honours n is never taken for one that ignores it.
    const openai = client();
    await openai.structured({ ...request, n: 3 });
    expect(openai.ignoresN).toBe(false);
  });

  it("finds out what a server does with n by one probe before it matters, and probes once", async () => {
    for (const name of ["ollama", "llamacpp", "openai"] as const) {
      const server = await startFakeProvider({ profile: name });
      try {
        const llm = new LlmClient({ apiKey: "sk-probe", baseURL: server.baseUrl(name), modelAliases: { ...PROVIDER_PROFILES[name].aliases }, baseDelayMs: 5 });
        const [usage, concurrent] = await Promise.all([llm.probeN({ model: "llm-5-nano" }), llm.probeN({ model: "llm-5-nano" })]);
        expect(llm.ignoresN, name).toBe(name !== "openai");
        expect(llm.providerN, name).toMatch(name === "openai" ? /found by a probe/ : /learned from a reply/);
        // One request (llama.cpp refuses n with a 400, which is not billed), billed to the first caller only.
        expect(server.chatRequests(), name).toHaveLength(1);
        expect((server.chatRequests()[0]!.body as FakeChatRequest).n).toBe(2);
        expect(usage.calls, name).toBe(name === "llamacpp" ? 0 : 1);
        expect(concurrent.calls).toBe(0);
        expect((await llm.probeN({ model: "llm-5-nano" })).calls).toBe(0);
        expect(server.chatRequests()).toHaveLength(1);
      } finally {
        await server.close();
      }
    }
    // Declared: nothing is sent.
    const declared = client({ providerN: "honoured" });
    expect((await declared.probeN({ model: "llm-5-nano" })).calls).toBe(0);
    expect(provider.chatRequests()).toHaveLength(0);
  });

  it("drops invalid choices and keeps the valid ones", async () => {
    provider.setBehaviour({ respond: (_r, { choice, generated }) => (choice === 0 ? { nonsense: true } : generated) });
    const result = await client().structured({ ...request, n: 2 });
    expect(result.choices).toHaveLength(1);
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("repairs a malformed reply by asking again with the problem", async () => {
    provider.setBehaviour({ mode: "malformed", modeTimes: 1 });
    const result = await client().structured(request);
    expect(Decision.safeParse(result.data).success).toBe(true);
    const bodies = sentBodies();
    expect(bodies).toHaveLength(2);
    const repair = bodies[1]?.messages ?? [];
    expect(repair).toHaveLength(4);
    expect(repair[2]?.role).toBe("assistant");
    expect(String(repair[3]?.content)).toMatch(/not valid JSON/);
    // Both requests were billed, and counted as replies of the model that answered.
    expect(result.usage.input_tokens).toBeGreaterThan(estimateTokens(`${request.system}\n${request.user}`));
    expect(result.usage).toMatchObject({ calls: 2, models: { [result.modelVersion]: 2 } });
  });

  it("repairs a reply that breaks the schema", async () => {
    provider.setBehaviour({ respond: (_r, { index, generated }) => (index === 0 ? { ...(generated as object), confidence: 7 } : generated) });
    const result = await client().structured(request);
    expect(result.data.confidence).toBeLessThanOrEqual(1);
    expect(String(sentBodies()[1]?.messages[3]?.content)).toContain("confidence");
  });

  it("retries a truncated reply with a larger output budget", async () => {
    provider.setBehaviour({ mode: "truncated", modeTimes: 1 });
    await client().structured({ ...request, maxOutputTokens: 300 });
    expect(sentBodies().map((b) => b.max_completion_tokens)).toEqual([300, 600]);
  });

  it("classifies a reply that stays invalid as model_output after the bounded repairs", async () => {
    provider.setBehaviour({ mode: "malformed" });
    const error = await failure(client({ repairAttempts: 2 }).structured(request));
    expect(error.category).toBe("model_output");
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/did not return a valid screening_decision reply after 3 attempts/);
    expect(provider.chatRequests()).toHaveLength(3);
  });

  it("maps a rejected key to auth without leaking it", async () => {
    const leaked = "sk-not-a-valid-key-9876543210";
    const error = await failure(client({ apiKey: leaked }).structured(request));
    expect(error.category).toBe("auth");
    expect(error.message).toBe("The language-model provider rejected the API key");
    expect(JSON.stringify(error.toWire())).not.toContain("9876");
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("fails fast with auth when no key is configured at all", async () => {
    vi.stubEnv("OPENAI_API_KEY", "");
    const llm = new LlmClient({ baseURL: provider.url });
    expect(llm.hasDefaultKey).toBe(false);
    const error = await failure(llm.structured(request));
    expect(error.category).toBe("auth");
    expect(error.message).toBe("No language-model provider key is configured: set OPENAI_API_KEY or send X-LLM-API-Key");
    expect(provider.requests).toHaveLength(0);
  });

  it("reads the key and base URL from the environment", async () => {
    vi.stubEnv("OPENAI_API_KEY", OTHER_KEY);
    vi.stubEnv("OPENAI_BASE_URL", provider.url);
    await new LlmClient({ modelAliases: ALIASES }).structured(request);
    expect(provider.chatRequests()[0]?.headers.authorization).toBe(`Bearer ${OTHER_KEY}`);
  });

  it("a call other than a job's gives up on a constant 429 after the bounded attempts, as a retryable rate_limit", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 10 });
    const error = await failure(client({ maxAttempts: 3 }).structured(request));
    expect(error.category).toBe("rate_limit");
    expect(error.retryable).toBe(true);
    expect(provider.chatRequests()).toHaveLength(3);
  });

  it("a job's call goes on past the bounded attempts and the budget while the provider rate-limits it", async () => {
    // Eight 429s, each asking for 200 ms: more than 3 attempts and longer than the 1 s budget.
    provider.setBehaviour({ mode: "always429", retryAfterMs: 200, modeTimes: 8 });
    const result = await client({ maxAttempts: 3, deadlineMs: 1000 }).structured({ ...request, background: true });
    expect(result.data.decision).toBeDefined();
    expect(provider.chatRequests().map((r) => r.status)).toEqual([...Array<number>(8).fill(429), 200]);
  });

  it("a job's call fails, saying why, once the provider has rate-limited it for LLM_RATE_LIMIT_WAIT_MS", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 200 });
    const started = Date.now();
    const error = await failure(client({ maxAttempts: 3, deadlineMs: 1000, rateLimitWaitMs: 1500 }).structured({ ...request, background: true }));
    expect(error.category).toBe("rate_limit");
    expect(error.message).toMatch(/kept answering with its rate limit for \d+ s \(LLM_RATE_LIMIT_WAIT_MS\)/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(provider.chatRequests().length).toBeGreaterThan(3);
  });

  describe("a synchronous call against a key that keeps answering 429 (issue 21)", () => {
    const BUDGET_MS = 2_000;
    const interactive = { ...request, interactive: true };
    /** Five calls in a row: each a retryable rate_limit with a retry-after, well inside the budget. */
    async function expectRateLimitedEveryTime(llm: LlmClient) {
      const errors = [];
      for (let call = 0; call < 5; call++) {
        const started = Date.now();
        const error = await failure(llm.structured(interactive));
        expect(Date.now() - started).toBeLessThan(BUDGET_MS);
        expect(error.category).toBe("rate_limit");
        expect(error.retryable).toBe(true);
        expect(error.retryAfterMs).toBeGreaterThanOrEqual(1000);
        errors.push(error);
      }
      return errors;
    }

    it("retry-after: 0: a rate_limit every time, never a timeout", async () => {
      provider.setBehaviour({ mode: "always429", retryAfterMs: 0 });
      await expectRateLimitedEveryTime(client({ interactiveDeadlineMs: BUDGET_MS, maxAttempts: 4 }));
    });

    it("x-ratelimit headers that pause the key for a minute: the first call hands the pause back, later ones send nothing", async () => {
      provider.setBehaviour({
        mode: "always429",
        retryAfterMs: 0,
        headers429: { "x-ratelimit-limit-requests": "1", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "60s" },
      });
      const errors = await expectRateLimitedEveryTime(client({ interactiveDeadlineMs: BUDGET_MS, maxAttempts: 4 }));
      expect(provider.chatRequests()).toHaveLength(1);
      for (const error of errors) expect(error.retryAfterMs).toBeGreaterThan(50_000);
    });

    it("a learned pace slower than the budget: a rate_limit at once, not a wait into a timeout", async () => {
      // One request a minute, some left: the limiter books the next send a minute ahead.
      provider.setBehaviour({
        mode: "always429",
        retryAfterMs: 0,
        headers429: { "x-ratelimit-limit-requests": "1", "x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "60s" },
      });
      await expectRateLimitedEveryTime(client({ interactiveDeadlineMs: BUDGET_MS, maxAttempts: 4 }));
    });
  });

  it("never retries insufficient_quota: exactly one request", async () => {
    provider.setBehaviour({ mode: "insufficient_quota" });
    const error = await failure(client().structured(request));
    expect(error.category).toBe("quota");
    expect(error.retryable).toBe(false);
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("retries 5xx and succeeds", async () => {
    provider.setBehaviour({ mode: "status500", modeTimes: 2 });
    const result = await client().structured(request);
    expect(Decision.safeParse(result.data).success).toBe(true);
    expect(provider.chatRequests().map((r) => r.status)).toEqual([500, 500, 200]);
  });

  it("counts the retries and replies of a call", async () => {
    provider.setBehaviour({ mode: "status500", modeTimes: 2 });
    const result = await client().structured(request);
    expect(result.usage).toMatchObject({ retries: 2, calls: 1 });
    provider.setBehaviour({ mode: "malformed", modeTimes: 1 });
    expect((await client().structured(request)).usage).toMatchObject({ retries: 0, calls: 2 });
  });

  it("sends a pinned call to its resolved model whatever the live alias table says", async () => {
    const llm = client();
    llm.setAliasOverrides({ "llm-5-nano": "gpt-4.1" });
    await llm.structured({ ...request, resolvedModel: "gpt-5-nano" });
    await llm.structured(request);
    expect(sentBodies().map((b) => b.model)).toEqual(["gpt-5-nano", "gpt-4.1"]);
  });

  it("names the provider's host and profile, never a key or a path", () => {
    expect(client().provider).toEqual({ host: new URL(provider.url).host, profile: "openai-compatible" });
    expect(new LlmClient({ apiKey: KEY, modelAliases: ALIASES }).provider).toEqual({ host: "api.openai.com", profile: "openai" });
    const azure = new LlmClient({ apiKey: KEY, baseURL: "https://me:secret@acme.openai.azure.com/openai/v1?key=x", modelAliases: ALIASES });
    expect(azure.provider).toEqual({ host: "acme.openai.azure.com", profile: "azure" });
  });

  it("maps an unknown model to validation without retrying", async () => {
    provider.setBehaviour({ knownModels: ["gpt-4.1"] });
    const error = await failure(client().structured(request));
    expect(error.category).toBe("validation");
    expect(error.message).toContain("does not offer the model 'gpt-5-nano' (alias 'llm-5-nano')");
    expect(error.message).toContain("PUT /v1/config/models");
    expect(provider.chatRequests()).toHaveLength(1);
  });

  it("says a pinned model is gone, naming it, without suggesting a remap", async () => {
    provider.setBehaviour({ knownModels: ["gpt-4.1"] });
    const error = await failure(client().structured({ ...request, resolvedModel: "gpt-5-nano" }));
    expect(error.category).toBe("validation");
    expect(error.message).toContain("no longer offers the model 'gpt-5-nano' that this job was pinned to at creation (alias 'llm-5-nano')");
    expect(error.message).not.toContain("PUT /v1/config/models");
  });

  it("times out a hanging provider within the deadline", async () => {
    provider.setBehaviour({ mode: "hang" });
    const started = Date.now();
    const error = await failure(client({ timeoutMs: 100, deadlineMs: 400 }).structured(request));
    expect(error.category).toBe("timeout");
    expect(error.retryable).toBe(true);
    expect(error.message).toBe("The language-model call did not complete within 0.4 s");
    expect(Date.now() - started).toBeLessThan(2000);
    expect(provider.chatRequests().length).toBeGreaterThanOrEqual(2);
  });

  it("propagates cancellation as LlmAbortError", async () => {
    provider.setBehaviour({ mode: "hang" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await client().structured({ ...request, signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmAbortError);
  });

  it("sends each call's own providerKey, concurrently, without mixing them up", async () => {
    provider.setBehaviour({ latencyMs: 50, respond: (_r, { apiKey, generated }) => ({ ...(generated as object), reasons: [apiKey.slice(-4)] }) });
    const llm = client({ apiKey: undefined });
    const [first, second] = await Promise.all([
      llm.structured({ ...request, providerKey: KEY }),
      llm.structured({ ...request, providerKey: OTHER_KEY }),
    ]);
    expect(first.data.reasons).toEqual([KEY.slice(-4)]);
    expect(second.data.reasons).toEqual([OTHER_KEY.slice(-4)]);
    const keys = provider.chatRequests().map((r) => r.headers.authorization).sort();
    expect(keys).toEqual([`Bearer ${KEY}`, `Bearer ${OTHER_KEY}`].sort());
  });

  it("stays under a provider's RPM limit for a burst of calls, with no 429 reaching callers", async () => {
    const limited = await startFakeProvider({ validKeys: [KEY], requestsPerMinute: 600, latencyMs: 20 });
    try {
      const llm = new LlmClient({ apiKey: KEY, baseURL: limited.url, modelAliases: ALIASES, concurrency: 8 });
      const results = await Promise.allSettled(Array.from({ length: 20 }, () => llm.structured(request)));
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
      const statuses = limited.chatRequests().map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(20);
      // The first burst fits the provider's one-second window (10); after that, pacing keeps it clean.
      expect(statuses.filter((s) => s === 429).length).toBeLessThanOrEqual(2);
    } finally {
      await limited.close();
    }
  });

  it("a job's calls ride out a provider that rate-limits without saying how long (no headers, no retry-after): none fails", async () => {
    // A server that sends no rate-limit headers nor retry-after (Ollama's profile) behind a limit:
    // 32 calls in flight against 10 a window, each asked for by a job.
    const limited = await startFakeProvider({ profile: "ollama", requestsPerMinute: 2400, burstSeconds: 0.25, latencyMs: 20 });
    try {
      const llm = new LlmClient({ apiKey: "ollama", baseURL: limited.baseUrl("ollama"), modelAliases: { ...PROVIDER_PROFILES.ollama.aliases }, concurrency: 32 });
      const results = await Promise.allSettled(Array.from({ length: 120 }, () => llm.structured({ ...request, background: true })));
      expect(results.filter((r) => r.status === "rejected")).toEqual([]);
      const statuses = limited.chatRequests().map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(120);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  }, 60_000);
});

describe("LlmClient.verifyKey", () => {
  it("resolves for an accepted key and throws auth for a rejected one", async () => {
    await expect(client().verifyKey()).resolves.toBeUndefined();
    const error = await failure(client().verifyKey({ providerKey: "sk-wrong-key-000000" }));
    expect(error.category).toBe("auth");
  });
});
