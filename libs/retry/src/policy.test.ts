import { describe, expect, it } from "vitest";
import { backoffDelayMs, retryWithPolicy } from "./policy";
import { virtualClock } from "./testing";

class Asked extends Error {
  constructor(readonly waitMs: number | undefined) {
    super("busy");
  }
}

const backoff = { baseDelayMs: 100, maxDelayMs: 1_000 };

describe("retryWithPolicy", () => {
  it("counts attempts, the first included, and hands the last failure to giveUp", async () => {
    const clock = virtualClock();
    const attempts: number[] = [];
    const error = await retryWithPolicy(
      async (n) => {
        attempts.push(n);
        throw new Asked(undefined);
      },
      { maxAttempts: 3, deadlineAt: Infinity, backoff, clock, isRetryable: () => true, giveUp: (e, overrun) => ({ e, overrun }) },
    ).catch((e: unknown) => e);
    expect(attempts).toEqual([1, 2, 3]);
    expect(clock.sleeps).toEqual([50, 100]);
    expect(error).toMatchObject({ e: { message: "busy" }, overrun: undefined });
  });

  it("waits what the failure asked for instead of the backoff, and says which wait it would not start", async () => {
    const clock = virtualClock();
    const waits = [300, undefined, 5_000];
    let n = 0;
    const error = await retryWithPolicy(
      async () => {
        throw new Asked(waits[n++]);
      },
      {
        deadlineAt: 2_000,
        backoff,
        clock,
        isRetryable: () => true,
        requestedDelayMs: (e) => (e as Asked).waitMs,
        giveUp: (_e, overrun) => new Error(`gave up before a ${overrun} ms wait`),
      },
    ).catch((e: unknown) => e);
    expect(clock.sleeps).toEqual([300, 100]);
    expect((error as Error).message).toBe("gave up before a 5000 ms wait");
  });

  it("ends at once on a failure that is not retryable, and returns a success", async () => {
    const clock = virtualClock();
    let calls = 0;
    await expect(
      retryWithPolicy(async () => (calls++, Promise.reject(new Error("bad request"))), { deadlineAt: Infinity, backoff, clock, isRetryable: () => false }),
    ).rejects.toThrow("bad request");
    expect(calls).toBe(1);
    let flaky = 0;
    await expect(retryWithPolicy(async () => (flaky++ < 2 ? Promise.reject(new Error("down")) : "ok"), { deadlineAt: Infinity, backoff, clock, isRetryable: () => true })).resolves.toBe("ok");
  });

  it("stops a real wait when the signal fires, with the signal's reason", async () => {
    const abort = new AbortController();
    setTimeout(() => abort.abort(new Error("cancelled")), 20);
    const started = Date.now();
    await expect(
      retryWithPolicy(async () => Promise.reject(new Error("down")), {
        deadlineAt: Infinity,
        backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
        signal: abort.signal,
        isRetryable: () => true,
        clock: { random: () => 0.99 },
      }),
    ).rejects.toThrow("cancelled");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("keeps full-jitter waits under the doubling ceiling", () => {
    for (let attempt = 1; attempt < 12; attempt++) expect(backoffDelayMs(attempt, backoff, () => 0.999)).toBeLessThan(Math.min(1_000, 100 * 2 ** (attempt - 1)));
  });
});
