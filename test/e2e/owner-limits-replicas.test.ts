import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { startStack, type HttpResult, type Stack } from "../support/stack";

/**
 * Per-owner limits hold across gateway replicas (issue 27, build 4): a client spreading its
 * requests over two gateways gets the allowance of one, not two — the token bucket and the
 * requests in flight are one record per owner in NATS KV that both gateways change by
 * compare-and-set. Each gateway alone would admit the whole burst (the old per-process limiter).
 */

const KEYS = { alice: "alice-use-key-0123456789abcdef", bob: "bob-use-key-0123456789abcdef", carol: "carol-use-key-0123456789abcdef" };
const BURST = 8;

describe("per-owner limits with two gateway replicas (real nats-server, criteria service)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    // Calls that reach the provider take 1.5 s, so a request stays in flight while another arrives.
    provider = await startFakeProvider({ latencyMs: 1_500 });
    stack = await startStack({
      gateways: 2,
      services: { criteria: 1 },
      env: {
        API_KEYS: Object.entries(KEYS).map(([owner, key]) => `${owner}:use:${key}`).join(","),
        KEY_RATE_PER_S: "0.2",
        KEY_RATE_BURST: String(BURST),
        KEY_CONCURRENCY: "2",
        OPENAI_API_KEY: "sk-owner-limits-server",
        OPENAI_BASE_URL: provider.url,
      },
    });
    // The criteria service created the limits bucket as it started; each gateway binds to it within 250 ms.
    await new Promise((r) => setTimeout(r, 1_000));
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const analyze = (owner: keyof typeof KEYS, gateway: number, mock = true): Promise<HttpResult> =>
    stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do reminders change prescribing?", mock }, { baseUrl: stack.gatewayUrls[gateway], headers: { "x-api-key": KEYS[owner] } });

  const expectRateLimited = (res: HttpResult, limit: string) => {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ detail: { message: expect.stringContaining(limit), error_code: "rate_limit", error_reason: "rate_limit", retryable: true } });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  };

  it("gives one owner the burst of one gateway across both, and another owner its own", async () => {
    const answers: HttpResult[] = [];
    for (let i = 0; i < 2 * BURST; i++) answers.push(await analyze("alice", i % 2));
    const admitted = answers.filter((r) => r.status === 200);
    // One token may come back while the requests are sent (0.2 per second).
    expect(admitted.length).toBeGreaterThanOrEqual(BURST);
    expect(admitted.length).toBeLessThanOrEqual(BURST + 1);
    for (const refused of answers.filter((r) => r.status !== 200)) expectRateLimited(refused, "KEY_RATE_PER_S");
    expect(answers.slice(0, BURST).every((r) => r.status === 200)).toBe(true);
    // Both gateways refused some: neither had an allowance of its own.
    const refusedBy = new Set(answers.map((r, i) => (r.status === 429 ? i % 2 : -1)).filter((g) => g >= 0));
    expect(refusedBy).toEqual(new Set([0, 1]));

    const bob = await Promise.all([analyze("bob", 0), analyze("bob", 1)]);
    expect(bob.map((r) => r.status)).toEqual([200, 200]);
  });

  it("counts one owner's requests in flight on both gateways together", async () => {
    // Two slow calls on the first gateway hold carol's two places…
    const slow = [analyze("carol", 0, false), analyze("carol", 0, false)];
    await new Promise((r) => setTimeout(r, 500));
    // …so the second gateway refuses a third, while another owner's call goes through.
    const [third, other] = await Promise.all([analyze("carol", 1), analyze("bob", 1)]);
    expectRateLimited(third, "KEY_CONCURRENCY");
    expect(other.status).toBe(200);
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    // Their places are given back when they end, on whichever gateway asks next.
    const again = await analyze("carol", 1);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  });
});
