import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LlmAbortError } from "./errors";
import { RateLimiter, type LimiterOptions } from "./limiter";

/**
 * Vitest's fake timers do not reach node:timers/promises, which the limiter sleeps on: the pacing
 * tests hand it a sleep on the (faked) global setTimeout.
 */
const fakeSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const paced = (options: LimiterOptions = {}) => new RateLimiter({ ...options, sleep: fakeSleep });

/** Runs `count` paced sends concurrently and returns the (fake) time at which each was allowed. */
async function sendTimes(limiter: RateLimiter, count: number, advanceMs: number): Promise<number[]> {
  const start = Date.now();
  const times: number[] = [];
  const all = Promise.all(
    Array.from({ length: count }, async () => {
      await limiter.pace();
      times.push(Date.now() - start);
    }),
  );
  await vi.advanceTimersByTimeAsync(advanceMs);
  await all;
  return times.sort((a, b) => a - b);
}

describe("RateLimiter concurrency", () => {
  it("never lets more than `concurrency` callers hold a slot, and serves waiters in order", async () => {
    const limiter = new RateLimiter({ concurrency: 3 });
    let inFlight = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const slot = await limiter.acquireSlot();
        order.push(i);
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        slot.release();
      }),
    );
    expect(peak).toBe(3);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(limiter.busy).toBe(false);
  });

  it("drops a queued caller that cancels, without losing the slot", async () => {
    const limiter = new RateLimiter({ concurrency: 1 });
    const held = await limiter.acquireSlot();
    const controller = new AbortController();
    const cancelled = limiter.acquireSlot(controller.signal);
    const next = limiter.acquireSlot();
    controller.abort();
    await expect(cancelled).rejects.toBeInstanceOf(LlmAbortError);
    held.release();
    held.release(); // releasing twice is harmless
    const slot = await next;
    expect(limiter.inFlight).toBe(1);
    slot.release();
    expect(limiter.busy).toBe(false);
  });
});

describe("RateLimiter pacing", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date("2026-11-22T00:00:00Z") });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("spaces requests evenly at a configured requestsPerMinute, once an idle key's burst (PACE_BURST_MS worth) is spent", async () => {
    const limiter = paced({ requestsPerMinute: 600 }); // one per 100 ms: 250 ms is two and a half
    expect(await sendTimes(limiter, 7, 1000)).toEqual([0, 0, 0, 50, 150, 250, 350]);
    // Idle again for longer than the burst: the same again, never more.
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await sendTimes(limiter, 5, 1000)).toEqual([0, 0, 0, 50, 150]);
  });

  it("does not pace before it knows a limit, then learns it from x-ratelimit-limit-requests", async () => {
    const limiter = paced();
    expect(await sendTimes(limiter, 3, 10)).toEqual([0, 0, 0]);
    limiter.observe(new Headers({ "x-ratelimit-limit-requests": "1200", "x-ratelimit-remaining-requests": "900", "x-ratelimit-reset-requests": "15s" }));
    expect(limiter.requestsPerMinute).toBe(1200);
    expect(await sendTimes(limiter, 8, 1000)).toEqual([0, 0, 0, 0, 0, 0, 50, 100]);
  });

  it("paces by tokens when a token limit is known", async () => {
    const limiter = paced();
    limiter.observe(new Headers({ "x-ratelimit-limit-tokens": "60000" })); // 1,000 tokens per second
    const start = Date.now();
    const times: number[] = [];
    const all = Promise.all([500, 500, 2000, 100].map(async (tokens) => {
      await limiter.pace(undefined, tokens);
      times.push(Date.now() - start);
    }));
    await vi.advanceTimersByTimeAsync(5000);
    await all;
    // 250 tokens of credit (PACE_BURST_MS), then each send books its tokens' share of the second.
    expect(times).toEqual([0, 250, 750, 2750]);
  });

  it("pauses every caller of the key until retry-after after a 429", async () => {
    const limiter = paced();
    limiter.onRateLimited(new Headers({ "retry-after-ms": "700" }));
    expect(await sendTimes(limiter, 3, 1000)).toEqual([700, 700, 700]);
  });

  it("re-books callers that were already waiting when a 429 arrives", async () => {
    const limiter = paced({ requestsPerMinute: 600 });
    const start = Date.now();
    const times: number[] = [];
    const all = Promise.all(Array.from({ length: 6 }, async () => {
      await limiter.pace();
      times.push(Date.now() - start);
    }));
    await vi.advanceTimersByTimeAsync(40); // the burst sent at 0; the others booked for 50, 150 and 250
    limiter.onRateLimited(new Headers({ "retry-after": "1" }));
    await vi.advanceTimersByTimeAsync(2000);
    await all;
    // The waiters went after the pause (ends at 1040), spaced by the pace: no burst on a spent window.
    expect(times.sort((a, b) => a - b)).toEqual([0, 0, 0, 1040, 1140, 1240]);
  });

  it("holds sends when the provider reports nothing remaining", async () => {
    const limiter = paced();
    limiter.observe(new Headers({ "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms" }));
    expect(await sendTimes(limiter, 1, 1000)).toEqual([300]);
  });

  it("treats zeroed headers (Azure) as unknown rather than as a stop", async () => {
    const limiter = paced();
    limiter.observe(new Headers({ "x-ratelimit-limit-requests": "0", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "60s" }));
    expect(limiter.requestsPerMinute).toBeUndefined();
    expect(await sendTimes(limiter, 2, 10)).toEqual([0, 0]);
  });

  it("lets a configured rate win over what headers say", async () => {
    const limiter = paced({ requestsPerMinute: 60 });
    limiter.observe(new Headers({ "x-ratelimit-limit-requests": "10000" }));
    expect(limiter.requestsPerMinute).toBe(60);
  });

  it("refuses at once a send it could not make before the caller's deadline, booking nothing", async () => {
    const limiter = paced({ requestsPerMinute: 2 }); // one per 30 s
    await limiter.pace(undefined, 0, Date.now() + 1000); // the first goes now and books the next 30 s ahead (less the burst)
    const refused = await limiter.pace(undefined, 0, Date.now() + 1000).catch((error: unknown) => error);
    expect(refused).toMatchObject({ category: "rate_limit", retryable: true, retryAfterMs: 29_750 });
    // The refusal took no place in the pace: a caller without a deadline still gets the next slot.
    expect(await sendTimes(limiter, 1, 60_000)).toEqual([29_750]);
    limiter.onRateLimited(new Headers({ "retry-after": "120" }));
    await expect(limiter.pace(undefined, 0, Date.now() + 60_000)).rejects.toMatchObject({ category: "rate_limit", retryAfterMs: 120_000 });
  });

  it("stops waiting when cancelled (on its own node:timers/promises sleep)", async () => {
    const limiter = new RateLimiter();
    limiter.onRateLimited(new Headers({ "retry-after": "30" }));
    const controller = new AbortController();
    const waiting = limiter.pace(controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(LlmAbortError);
  });
});

describe("RateLimiter share of a key's budget across replicas", () => {
  it("admits only its share of the key's concurrency, and paces at its part of the key's rates", () => {
    const limiter = new RateLimiter({ concurrency: 5, requestsPerMinute: 600 });
    limiter.setShare({ index: 0, members: 2 });
    expect(limiter.concurrency).toBe(3); // 5 over two: the first member takes the remainder
    expect(limiter.requestsPerMinute).toBe(300);
    limiter.setShare({ index: 1, members: 2 });
    expect(limiter.concurrency).toBe(2);
    limiter.setShare({ index: 7, members: 8 });
    expect(limiter.concurrency, "never below one call, or the replica's jobs would stall").toBe(1);
  });

  it("on a smaller share holds waiters until calls in flight are below it; a larger share admits them at once", async () => {
    const limiter = new RateLimiter({ concurrency: 4 });
    const held = await Promise.all([1, 2, 3, 4].map(() => limiter.acquireSlot()));
    limiter.setShare({ index: 0, members: 2 });
    let granted = 0;
    const waiting = [1, 2].map(() => limiter.acquireSlot().then((slot) => (granted++, slot)));
    held[0]!.release();
    held[1]!.release();
    await new Promise((r) => setImmediate(r));
    expect(granted, "4 → 2 in flight: still not below the share of 2").toBe(0);
    held[2]!.release();
    await new Promise((r) => setImmediate(r));
    expect(granted).toBe(1);
    limiter.setShare({ index: 0, members: 1 });
    await new Promise((r) => setImmediate(r));
    expect(granted).toBe(2);
    expect(limiter.inFlight).toBe(3);
    expect(limiter.concurrency).toBe(limiter.keyConcurrency);
    for (const slot of [held[3]!, ...(await Promise.all(waiting))]) slot.release();
  });
});
