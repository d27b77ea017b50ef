import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { startStack, type Stack } from "../support/stack";

/**
 * The spec's 429 for a synchronous call whose provider key is rate limited (issue 21): answered
 * at once, retryable, with Retry-After, on the first call and on every call while the pause
 * lasts; never the 504 of a limiter that waits past the call's budget.
 */

const SERVER_KEY = "sk-sync-rate-limit-e2e";
// One provider key per scenario: each key has its own limiter, so no scenario inherits another's pause or pace.
const PACED_KEY = "sk-sync-rate-limit-paced-0001";
const SYNC_BUDGET_MS = 15_000; // LLM_SYNC_DEADLINE_MS's default

describe("a synchronous call against a rate-limited key (criteria, real nats-server, fake provider)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [SERVER_KEY, PACED_KEY] });
    stack = await startStack({ services: { criteria: 1 }, env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url } });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });
  beforeEach(() => provider.reset());

  async function expect429EveryTime(calls: number, providerKey?: string): Promise<number[]> {
    const retryAfters: number[] = [];
    for (let call = 0; call < calls; call++) {
      const started = Date.now();
      const body = { research_question: `Do reminders change prescribing? (${call})` };
      const res = await stack.http("POST", "/v1/criteria/analyze-question", body, providerKey ? { headers: { "x-llm-api-key": providerKey } } : {});
      const elapsed = Date.now() - started;
      expect(res.status, JSON.stringify(res.body)).toBe(429);
      expect(res.body).toEqual({ detail: { message: expect.any(String), error_code: "rate_limit", error_reason: "rate_limit", retryable: true } });
      const retryAfter = Number(res.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(elapsed).toBeLessThan(SYNC_BUDGET_MS);
      retryAfters.push(retryAfter);
    }
    return retryAfters;
  }

  it("retry-after: 0 on every answer: a 429 rate_limit each time, inside the budget", async () => {
    provider.setBehaviour({ mode: "always429", retryAfterMs: 0 });
    await expect429EveryTime(4);
    expect(provider.chatRequests().length).toBeGreaterThanOrEqual(4);
  });

  it("x-ratelimit headers that set a pace slower than the budget: a 429 at once, not a wait into a 504", async () => {
    // Two requests a minute, one left: the limiter books the next send 30 s ahead, past the 15 s budget.
    provider.setBehaviour({
      mode: "always429",
      retryAfterMs: 0,
      headers429: { "x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "30s" },
    });
    const retryAfters = await expect429EveryTime(3, PACED_KEY);
    for (const seconds of retryAfters) expect(seconds).toBeGreaterThan(10);
  });

  it("x-ratelimit headers pausing the key for a minute: the first call answers 429 and later calls answer 429 without reaching the provider", async () => {
    provider.setBehaviour({
      mode: "always429",
      retryAfterMs: 0,
      headers429: { "x-ratelimit-limit-requests": "1", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "60s" },
    });
    const retryAfters = await expect429EveryTime(4);
    // The pause is handed back to the client: come back in about a minute.
    for (const seconds of retryAfters) expect(seconds).toBeGreaterThan(30);
    expect(provider.chatRequests()).toHaveLength(1);
  });
});
