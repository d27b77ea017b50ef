import { describe, expect, it } from "vitest";
import { keyLimiter } from "./key-limits";

/** A limiter on a clock the test moves. */
function limiter(settings: { concurrency: number; ratePerS: number; burst: number }) {
  let now = 0;
  const admit = keyLimiter(settings, () => now);
  return { admit, advance: (ms: number) => (now += ms) };
}

describe("keyLimiter", () => {
  it("admits a burst, then the sustained rate, and says how long to wait", () => {
    const { admit, advance } = limiter({ concurrency: 0, ratePerS: 10, burst: 5 });
    for (let i = 0; i < 5; i++) admit("alice").release!();
    const refused = admit("alice");
    expect(refused.refusal).toMatchObject({ category: "rate_limit", retryable: true, retryAfterMs: 100 });
    expect(refused.refusal!.message).toMatch(/KEY_RATE_PER_S/);
    advance(50);
    expect(admit("alice").refusal?.retryAfterMs).toBe(50);
    advance(50);
    expect(admit("alice").release).toBeTypeOf("function");
    expect(admit("alice").refusal).toBeDefined();
    // A second's worth of tokens, capped at the burst.
    advance(10_000);
    for (let i = 0; i < 5; i++) expect(admit("alice").refusal).toBeUndefined();
    expect(admit("alice").refusal).toBeDefined();
  });

  it("bounds requests in flight, freeing a place when one ends (once, however often released)", () => {
    const { admit } = limiter({ concurrency: 2, ratePerS: 0, burst: 1 });
    const first = admit("alice");
    const second = admit("alice");
    const third = admit("alice");
    expect(third.refusal).toMatchObject({ category: "rate_limit", retryAfterMs: 1_000 });
    expect(third.refusal!.message).toMatch(/More than 2 requests .* in flight \(KEY_CONCURRENCY/);
    first.release!();
    first.release!();
    expect(admit("alice").refusal).toBeUndefined();
    expect(admit("alice").refusal).toBeDefined();
    second.release!();
    expect(admit("alice").refusal).toBeUndefined();
  });

  it("keeps owners apart: one client's exhausted limits leave another's whole", () => {
    const { admit } = limiter({ concurrency: 3, ratePerS: 1, burst: 3 });
    for (let i = 0; i < 3; i++) expect(admit("bob").refusal).toBeUndefined();
    expect(admit("bob").refusal).toBeDefined();
    for (let i = 0; i < 3; i++) expect(admit("alice").refusal).toBeUndefined();
  });

  it("turns each limit off at 0", () => {
    const { admit } = limiter({ concurrency: 0, ratePerS: 0, burst: 1 });
    for (let i = 0; i < 10_000; i++) expect(admit("alice").refusal).toBeUndefined();
  });
});
