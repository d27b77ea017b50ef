import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { retrying } from "./retry";
import { virtualClock } from "@litrev/retry/testing";

/** An operation failing `times` times with `error`, then answering "ok". */
function failing(times: number, error: () => unknown) {
  const run = Object.assign(
    async () => {
      if (run.calls++ < times) throw error();
      return "ok";
    },
    { calls: 0 },
  );
  return run;
}

describe("retrying (the job machinery's NATS and store calls)", () => {
  it("rides out transient failures with a jittered backoff capped at 2 s", async () => {
    const clock = virtualClock();
    const run = failing(6, () => new Error("connection refused"));
    await expect(retrying(run, { clock })).resolves.toBe("ok");
    expect(run.calls).toBe(7);
    // random 0.5 × min(2000, 200·2^(n-1))
    expect(clock.sleeps).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("gives up with the last failure rather than start a wait past the budget", async () => {
    const clock = virtualClock();
    const run = failing(Infinity, () => new Error("still down"));
    await expect(retrying(run, { clock, budgetMs: 5_000 })).rejects.toThrow("still down");
    expect(clock.time).toBeLessThan(5_000);
    expect(run.calls).toBe(clock.sleeps.length + 1);
  });

  it("ends at once on a non-retryable ServiceError or an error the caller calls final", async () => {
    const clock = virtualClock();
    const gone = failing(1, () => new ServiceError("not_found", "input gone", { retryable: false }));
    await expect(retrying(gone, { clock })).rejects.toThrow("input gone");
    expect(gone.calls).toBe(1);
    const lost = failing(1, () => new RangeError("lease lost"));
    await expect(retrying(lost, { clock, isFinal: (e) => e instanceof RangeError })).rejects.toThrow("lease lost");
    expect(lost.calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("stops waiting when aborted, with the signal's reason", async () => {
    const abort = new AbortController();
    const run = failing(Infinity, () => new Error("down"));
    setTimeout(() => abort.abort(new Error("shutting down")), 30);
    const started = Date.now();
    await expect(retrying(run, { signal: abort.signal, budgetMs: 60_000 })).rejects.toThrow("shutting down");
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
