import { APIError } from "openai";
import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { LlmAbortError } from "./errors";
import { backoffDelayMs } from "@litrev/retry";
import { withRetry, type RetryClock } from "./retry";

/** A clock whose sleeps return at once and only move virtual time, recording each delay. */
function virtualClock(random = 0.5): RetryClock & { sleeps: number[]; time: number } {
  const clock = {
    time: 1_000_000,
    sleeps: [] as number[],
    now: () => clock.time,
    random: () => random,
    sleep: async (ms: number) => {
      clock.sleeps.push(ms);
      clock.time += ms;
    },
  };
  return clock;
}

function httpError(status: number, error: Record<string, unknown> = {}, headers: Record<string, string> = {}): APIError {
  return APIError.generate(status, { error: { message: "provider says no", ...error } }, undefined, new Headers(headers));
}

/** An operation that fails with the given errors, then succeeds. */
function failing(...errors: unknown[]): (() => Promise<string>) & { calls: number } {
  const run = Object.assign(
    async () => {
      const error = errors[run.calls++];
      if (error !== undefined) throw error;
      return "ok";
    },
    { calls: 0 },
  );
  return run;
}

describe("withRetry", () => {
  it("waits exactly what retry-after-ms / retry-after ask for", async () => {
    const clock = virtualClock();
    const run = failing(httpError(429, {}, { "retry-after-ms": "750" }), httpError(503, {}, { "retry-after": "2" }));
    await expect(withRetry(run, { clock })).resolves.toBe("ok");
    expect(run.calls).toBe(3);
    expect(clock.sleeps).toEqual([750, 2000]);
  });

  it("backs off exponentially with full jitter when no header says how long", async () => {
    const clock = virtualClock(0.5);
    const run = failing(httpError(500), httpError(500), httpError(500), new ServiceError("timeout", "slow"));
    await withRetry(run, { clock, baseDelayMs: 100, maxDelayMs: 300 });
    // random 0.5 × min(300, 100·2^(n-1)): 50, 100, 150, then capped at 150.
    expect(clock.sleeps).toEqual([50, 100, 150, 150]);
    for (let attempt = 1; attempt < 10; attempt++) {
      expect(backoffDelayMs(attempt, { baseDelayMs: 100, maxDelayMs: 300 }, () => 0.999)).toBeLessThan(300);
    }
  });

  it.each([
    ["auth", httpError(401, { code: "invalid_api_key" })],
    ["quota", httpError(429, { code: "insufficient_quota", type: "insufficient_quota" })],
    ["validation", httpError(400)],
  ])("does not retry %s", async (category, error) => {
    const clock = virtualClock();
    const run = failing(error, error);
    await expect(withRetry(run, { clock })).rejects.toMatchObject({ category });
    expect(run.calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("gives up after maxAttempts with the last, retryable error", async () => {
    const clock = virtualClock();
    const limited = httpError(429, { code: "rate_limit_exceeded" }, { "retry-after-ms": "10" });
    const run = failing(...Array.from({ length: 10 }, () => limited));
    const error = await withRetry(run, { clock, maxAttempts: 4 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ category: "rate_limit", retryable: true });
    expect(run.calls).toBe(4);
  });

  it("does not start a wait that would overrun the deadline", async () => {
    const clock = virtualClock();
    const run = failing(httpError(429, {}, { "retry-after": "30" }), httpError(429, {}, { "retry-after": "30" }));
    await expect(withRetry(run, { clock, deadlineMs: 10_000 })).rejects.toMatchObject({ category: "rate_limit" });
    expect(run.calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("stops a hanging attempt at the deadline with a timeout", async () => {
    const started = Date.now();
    const error = await withRetry(
      ({ signal }) =>
        new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted by deadline")))),
      { deadlineMs: 150 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ category: "timeout", retryable: true });
    expect((error as Error).message).toContain("0.2 s");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("honours an absolute deadline that started before it, naming the whole budget", async () => {
    const error = await withRetry(
      ({ signal }) => new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")))),
      { deadlineMs: 120_000, deadlineAt: Date.now() + 80 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ category: "timeout" });
    expect((error as Error).message).toContain("within 120 s");
  });

  it("gives each attempt the time left before the deadline", async () => {
    const clock = virtualClock();
    const seen: number[] = [];
    const run = failing(httpError(500, {}, { "retry-after-ms": "400" }));
    await withRetry(
      async (context) => {
        seen.push(context.remainingMs);
        return run();
      },
      { clock, deadlineMs: 1000 },
    );
    expect(seen).toEqual([1000, 600]);
  });

  it("cancels a backoff sleep at once and reports LlmAbortError", async () => {
    const controller = new AbortController();
    const run = failing(httpError(429, {}, { "retry-after": "60" }));
    const started = Date.now();
    setTimeout(() => controller.abort(new Error("job cancelled")), 30);
    const error = await withRetry(run, { signal: controller.signal, deadlineMs: 120_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmAbortError);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("does not even start when already cancelled", async () => {
    const run = failing();
    await expect(withRetry(run, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(LlmAbortError);
    expect(run.calls).toBe(0);
  });
});
