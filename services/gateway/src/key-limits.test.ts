import { describe, expect, it, vi } from "vitest";
import { LocalRecords, type RecordStore } from "@litrev/messaging";
import { gatewayShare, HOLDER_LEASE_MS, viewOf, type KeyLimitSettings } from "./key-allowance";
import { KeyLimiter, keyUse } from "./key-limits";

const OFF: KeyLimitSettings = { concurrency: 0, ratePerS: 0, burst: 1, heavy: 0, streams: 0 };

/** The bucket behind a connection that `how` says is fine, failing, timing out (without applying) or answering late. */
function through(bucket: LocalRecords, how: () => "ok" | "fail" | "timeout" | "late"): RecordStore {
  const call = <R>(run: () => Promise<R>): Promise<R> => {
    const mode = how();
    if (mode === "fail") return Promise.reject(new Error("NATS is down"));
    if (mode === "timeout") return new Promise((_, reject) => setTimeout(() => reject(new Error("TimeoutError")), 60));
    if (mode === "late") return new Promise((resolve) => setTimeout(() => resolve(run()), 60));
    return run();
  };
  return { change: (key, apply) => call(() => bucket.change(key, apply)), read: (key) => call(() => bucket.read(key)) };
}

/** Limiters (one per gateway) on one store and a clock the test moves. */
function gateways(settings: Partial<KeyLimitSettings>, count = 1, store: RecordStore = new LocalRecords()) {
  let now = 1_000_000;
  const limiters = Array.from({ length: count }, () => new KeyLimiter({ ...OFF, ...settings }, { shared: () => store, now: () => now }));
  return { limiters, admit: limiters[0]!.admit.bind(limiters[0]), advance: (ms: number) => (now += ms) };
}

describe("KeyLimiter", () => {
  it("admits a burst, then the sustained rate, and says how long to wait", async () => {
    const { admit, advance } = gateways({ ratePerS: 10, burst: 5 });
    for (let i = 0; i < 5; i++) (await admit("alice", "request")).release!();
    const refused = await admit("alice", "request");
    expect(refused.refusal).toMatchObject({ category: "rate_limit", retryable: true, retryAfterMs: 100 });
    expect(refused.refusal!.message).toMatch(/KEY_RATE_PER_S/);
    advance(50);
    expect((await admit("alice", "request")).refusal?.retryAfterMs).toBe(50);
    advance(50);
    expect((await admit("alice", "request")).release).toBeTypeOf("function");
    expect((await admit("alice", "request")).refusal).toBeDefined();
    // A second's worth of tokens, capped at the burst.
    advance(10_000);
    for (let i = 0; i < 5; i++) expect((await admit("alice", "stream")).refusal).toBeUndefined();
    expect((await admit("alice", "heavy")).refusal).toBeDefined();
  });

  it("bounds requests in flight, freeing a place when one ends (once, however often released)", async () => {
    const { admit } = gateways({ concurrency: 2 });
    const first = await admit("alice", "request");
    const second = await admit("alice", "heavy");
    const third = await admit("alice", "request");
    expect(third.refusal).toMatchObject({ category: "rate_limit", retryAfterMs: 1_000 });
    expect(third.refusal!.message).toMatch(/More than 2 requests .* in flight \(KEY_CONCURRENCY/);
    first.release!();
    first.release!();
    await Promise.resolve();
    expect((await admit("alice", "request")).refusal).toBeUndefined();
    expect((await admit("alice", "request")).refusal).toBeDefined();
    second.release!();
    expect((await admit("alice", "request")).refusal).toBeUndefined();
  });

  it("bounds heavy reads and event streams apart from each other and from requests", async () => {
    const { admit } = gateways({ concurrency: 10, heavy: 2, streams: 3 });
    expect((await admit("alice", "heavy")).refusal).toBeUndefined();
    expect((await admit("alice", "heavy")).refusal).toBeUndefined();
    const heavy = await admit("alice", "heavy");
    expect(heavy.refusal!.message).toMatch(/More than 2 exports, reports, validations and polls of large finished jobs .*KEY_HEAVY_CONCURRENCY/);
    for (let i = 0; i < 3; i++) expect((await admit("alice", "stream")).refusal).toBeUndefined();
    const stream = await admit("alice", "stream");
    expect(stream.refusal).toMatchObject({ retryAfterMs: 5_000 });
    expect(stream.refusal!.message).toMatch(/already has 3 job event streams open \(EVENT_STREAMS_PER_OWNER/);
    // Streams hold no request place; heavy reads hold one each.
    for (let i = 0; i < 8; i++) expect((await admit("alice", "request")).refusal).toBeUndefined();
    expect((await admit("alice", "request")).refusal).toBeDefined();
    // Another owner is untouched.
    expect((await admit("bob", "heavy")).refusal).toBeUndefined();
    expect((await admit("bob", "stream")).refusal).toBeUndefined();
  });

  it("gives one owner the allowance of one gateway, however many gateways share the records", async () => {
    const { limiters } = gateways({ concurrency: 4, ratePerS: 1, burst: 6 }, 3);
    const admitted = [];
    for (let i = 0; i < 9; i++) admitted.push(await limiters[i % 3]!.admit("alice", "request"));
    expect(admitted.filter((a) => a.release)).toHaveLength(4); // in flight, across the three
    for (const a of admitted) a.release?.();
    await new Promise((r) => setImmediate(r));
    const more = [];
    for (let i = 0; i < 6; i++) more.push(await limiters[i % 3]!.admit("alice", "request"));
    expect(more.filter((a) => a.release)).toHaveLength(2); // the burst's 6 tokens, 4 spent above
    expect(more.find((a) => a.refusal)!.refusal!.message).toMatch(/KEY_RATE_PER_S/);
  });

  it("frees the places of a gateway that stopped renewing them once its lease runs out", async () => {
    const { limiters, advance } = gateways({ streams: 2 }, 2);
    const [gone, live] = limiters as [KeyLimiter, KeyLimiter];
    expect((await gone.admit("alice", "stream")).refusal).toBeUndefined();
    expect((await gone.admit("alice", "stream")).refusal).toBeUndefined();
    gone.close(); // it stops renewing (as if it had crashed)
    expect((await live.admit("alice", "stream")).refusal).toBeDefined();
    advance(HOLDER_LEASE_MS + 1);
    expect((await live.admit("alice", "stream")).refusal).toBeUndefined();
  });

  it("keeps the places of a gateway that renews them, however long they are held", async () => {
    vi.useFakeTimers();
    try {
      const { limiters, advance } = gateways({ streams: 1 }, 2);
      const [holding, other] = limiters as [KeyLimiter, KeyLimiter];
      const stream = await holding.admit("alice", "stream");
      for (let i = 0; i < 12; i++) {
        advance(HOLDER_LEASE_MS / 3);
        await vi.advanceTimersByTimeAsync(HOLDER_LEASE_MS / 3);
      }
      expect((await other.admit("alice", "stream")).refusal).toBeDefined();
      stream.release!();
      await vi.advanceTimersByTimeAsync(0);
      expect((await other.admit("alice", "stream")).refusal).toBeUndefined();
      for (const limiter of limiters) limiter.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("counts in this gateway alone without NATS (no bucket: nothing reaches a service), and refuses when a bucket it never reached fails", async () => {
    const alone = new KeyLimiter({ ...OFF, concurrency: 1 }, { shared: () => null });
    expect((await alone.admit("alice", "request")).release).toBeTypeOf("function");
    expect((await alone.admit("alice", "request")).refusal!.message).toMatch(/KEY_CONCURRENCY.*limit ÷ 1 gateway.*unreachable/);
    alone.close();
    const failing = through(new LocalRecords(), () => "fail");
    const { admit } = gateways({ concurrency: 1 }, 1, failing);
    expect((await admit("alice", "request")).refusal!.message).toMatch(/does not know how many gateways share the limits/);
  });

  it("fails closed when the shared records do not answer in time: each of two gateways allows its share, never a fresh count from zero", async () => {
    // The bucket as the attack left it: every change times out (JetStream's own timeout, scaled down) without being applied.
    const bucket = new LocalRecords();
    let slow = false;
    const store = through(bucket, () => (slow ? "timeout" : "ok"));
    const settings = { ...OFF, heavy: 4, concurrency: 8 };
    vi.useFakeTimers();
    const limiters = [0, 1].map(() => new KeyLimiter(settings, { shared: () => store, waitMs: 20 }));
    const admitted = [];
    try {
      await vi.advanceTimersByTimeAsync(HOLDER_LEASE_MS / 3); // each said it is alive and learned of the other
      const before = await limiters[0]!.admit("mallory", "heavy"); // one place on the shared record
      expect(before.release).toBeTypeOf("function");
      slow = true;
      for (let i = 0; i < 12; i++) {
        const admission = limiters[i % 2]!.admit("mallory", "heavy");
        await vi.advanceTimersByTimeAsync(100);
        admitted.push(await admission);
      }
    } finally {
      vi.useRealTimers();
    }
    // 4 across both: the first gateway's share (2) counts the place it held already.
    expect(admitted.filter((a) => a.release)).toHaveLength(3);
    const refused = admitted.find((a) => a.refusal)!.refusal!;
    expect(refused).toMatchObject({ category: "rate_limit", retryable: true });
    expect(refused.message).toMatch(/KEY_HEAVY_CONCURRENCY.*share of each limit \(limit ÷ 2 gateways.*does not answer in time/);
    for (const limiter of limiters) limiter.close();
  });

  it("waits for a bucket that slows at once only a few of its usual round trips, not the whole KEY_LIMITS_WAIT_MS (issue 40: the victim's first export paid 500 ms)", async () => {
    const bucket = new LocalRecords();
    let delayMs = 2;
    const delayed: RecordStore = {
      change: (key, apply) => new Promise((resolve) => setTimeout(resolve, delayMs)).then(() => bucket.change(key, apply)),
      read: (key) => new Promise((resolve) => setTimeout(resolve, delayMs)).then(() => bucket.read(key)),
    };
    vi.useFakeTimers();
    const limiter = new KeyLimiter({ ...OFF, heavy: 4 }, { shared: () => delayed, waitMs: 500 });
    try {
      await vi.advanceTimersByTimeAsync(50); // the first beat: a few answers of 2 ms
      for (let i = 0; i < 6; i++) {
        const admission = limiter.admit("alice", "heavy");
        await vi.advanceTimersByTimeAsync(5);
        (await admission).release!();
      }
      delayMs = 3_000; // the attack's proxy
      let decided = false;
      const admission = limiter.admit("alice", "heavy").then((a) => ((decided = true), a));
      await vi.advanceTimersByTimeAsync(150);
      expect(decided).toBe(true);
      expect((await admission).release).toBeTypeOf("function"); // on its share (one gateway known: the whole limit)
      await vi.advanceTimersByTimeAsync(4_000);
    } finally {
      limiter.close();
      vi.useRealTimers();
    }
  });

  it("holds two gateways to the limit across both when the bucket slows just after they started (the first one learned of the second only at its next beat)", async () => {
    const bucket = new LocalRecords();
    let slow = false;
    const store = through(bucket, () => (slow ? "timeout" : "ok"));
    vi.useFakeTimers();
    const admitted = [];
    const limiters: KeyLimiter[] = [];
    try {
      // Each says it is alive as it starts: the first sees itself alone, the second sees both.
      for (let i = 0; i < 2; i++) {
        limiters.push(new KeyLimiter({ ...OFF, streams: 4 }, { shared: () => store, waitMs: 20 }));
        await vi.advanceTimersByTimeAsync(10);
      }
      slow = true;
      for (let i = 0; i < 12; i++) {
        const admission = limiters[i % 2]!.admit("mallory", "stream");
        await vi.advanceTimersByTimeAsync(100);
        admitted.push(await admission);
      }
    } finally {
      vi.useRealTimers();
      for (const limiter of limiters) limiter.close();
    }
    expect(admitted.filter((a) => a.release)).toHaveLength(4);
    expect(admitted.find((a) => a.refusal)!.refusal!.message).toMatch(/EVENT_STREAMS_PER_OWNER/);
  });

  it("refuses counted work while it has not learned how many gateways share the limits (the bucket slow from its start), never deciding as if alone", async () => {
    const store = through(new LocalRecords(), () => "timeout");
    const limiter = new KeyLimiter({ ...OFF, heavy: 4, streams: 4 }, { shared: () => store, waitMs: 20 });
    try {
      for (const use of ["heavy", "stream"] as const) {
        const refused = (await limiter.admit("mallory", use)).refusal;
        expect(refused).toMatchObject({ category: "rate_limit", retryable: true });
        expect(refused!.message).toMatch(/does not know how many gateways share the limits.*does not answer in time/);
      }
    } finally {
      limiter.close();
    }
  });

  it("keeps its share of the burst when it decides alone, whatever places it took and gave back before", async () => {
    let failing = false;
    const bucket = new LocalRecords();
    const store = through(bucket, () => (failing ? "fail" : "ok"));
    const { admit } = gateways({ ratePerS: 1, burst: 10 }, 1, store);
    for (let i = 0; i < 3; i++) (await admit("alice", "request")).release!();
    failing = true;
    const alone = [];
    for (let i = 0; i < 12; i++) alone.push(await admit("alice", "request"));
    for (const a of alone) a.release?.();
    expect(alone.filter((a) => a.release)).toHaveLength(10);
  });

  it("gives back a place the shared record granted after the gateway had stopped waiting", async () => {
    const bucket = new LocalRecords();
    const late = through(bucket, () => "late");
    const limiter = new KeyLimiter({ ...OFF, heavy: 2 }, { shared: () => late, waitMs: 10 });
    await new Promise((r) => setTimeout(r, 400)); // its first beat landed (late, a few round trips): one gateway known
    const admitted = await limiter.admit("mallory", "heavy");
    expect(admitted.release).toBeTypeOf("function"); // decided on the share (one gateway known: the whole limit)
    await new Promise((r) => setTimeout(r, 200));
    const held = bucket.changeNow("gateway.mallory", (record: { holders: Record<string, { heavy: number }> } | undefined) => ({ next: record ?? { holders: {} }, result: record?.holders ?? {} }));
    expect(Object.values(held).reduce((sum, h) => sum + h.heavy, 0)).toBe(0);
    limiter.close();
  });

  it("asks the shared records again once they answer in time", async () => {
    const bucket = new LocalRecords();
    let failing = false;
    const store = through(bucket, () => (failing ? "fail" : "ok"));
    const [first, second] = [0, 1].map(() => new KeyLimiter({ ...OFF, heavy: 2 }, { shared: () => store, waitMs: 20 })) as [KeyLimiter, KeyLimiter];
    await new Promise((r) => setTimeout(r, 10)); // both said they are alive, the first before the second
    failing = true;
    // The second's share is nothing (the first, when it beat, saw itself alone: the whole limit).
    expect((await second.admit("alice", "heavy")).refusal!.message).toMatch(/share of KEY_HEAVY_CONCURRENCY is no place/);
    expect((await first.admit("alice", "heavy")).release).toBeTypeOf("function");
    failing = false;
    await new Promise((r) => setTimeout(r, 1_300)); // a probe answered
    // On the shared record again: the whole limit across the gateways, not the second's share of 1.
    expect((await second.admit("alice", "heavy")).release).toBeTypeOf("function");
    expect((await second.admit("alice", "heavy")).release).toBeTypeOf("function");
    expect((await second.admit("alice", "heavy")).refusal).toBeDefined();
    // The first gateway's owner with a place taken alone is decided alone until it is given back.
    for (const limiter of [first, second]) limiter.close();
  });

  it("turns each limit off at 0", async () => {
    const { limiters, admit } = gateways({});
    for (const use of ["request", "heavy", "stream"] as const) expect(limiters[0]!.counts(use)).toBe(false);
    for (let i = 0; i < 1_000; i++) expect((await admit("alice", "request")).refusal).toBeUndefined();
  });
});

describe("viewOf and gatewayShare", () => {
  it("divides by the live gateways and leaves the claims of any that beat within twice the lease, dropping the silent", () => {
    const now = 1_000_000;
    const members = { me: now - 60_000, b: now - 60_000, c: now - 60_000, d: now - 60_000, e: now - 1_000 };
    const beats = { b: { at: now - 500, seen: 2 }, c: { at: now - 20_000, seen: 3 }, d: { at: now - 40_000, seen: 4 } };
    const { view, gone } = viewOf(members, beats, "me", now);
    // b is live; c is past the lease but may still decide on its share; e joined without a beat yet (counted as alone); d is gone.
    expect(view).toEqual({ gateways: 2, others: [2, 3, 1] });
    expect(gone).toEqual(["d"]);
    expect(gatewayShare({ ...OFF, streams: 12 }, view).streams).toBe(0);
    expect(gatewayShare({ ...OFF, streams: 12 }, { gateways: 2, others: [2] }).streams).toBe(6);
    // A newcomer beside one that saw itself alone gets nothing until that one has counted it.
    expect(gatewayShare({ ...OFF, streams: 4, heavy: 4 }, { gateways: 2, others: [1] })).toMatchObject({ streams: 0, heavy: 0 });
  });
});

describe("keyUse", () => {
  it("counts writes and heavy reads, never polls, listings or active-job reads", () => {
    expect(keyUse("POST", "/v1/screening/jobs")).toBe("request");
    expect(keyUse("PUT", "/v1/config/screening")).toBe("request");
    expect(keyUse("GET", "/v1/screening/jobs/:job_id/export")).toBe("heavy");
    expect(keyUse("GET", "/v1/indexer/jobs/:job_id/report")).toBe("heavy");
    expect(keyUse("POST", "/v1/screening/jobs/:job_id/validation")).toBe("heavy");
    expect(keyUse("GET", "/v1/indexer/jobs/:job_id/events")).toBe("stream");
    expect(keyUse("POST", "/v1/screening/jobs/:job_id/validation-samples")).toBe("heavy");
    expect(keyUse("GET", "/v1/screening/jobs/:job_id/validation-samples/:sample_id/download")).toBe("heavy");
    expect(keyUse("POST", "/v1/screening/jobs/:job_id/validation-samples/:sample_id/labels")).toBe("request");
    expect(keyUse("GET", "/v1/screening/jobs/:job_id/validation-samples/:sample_id")).toBeNull();
    expect(keyUse("GET", "/v1/screening/jobs/:job_id")).toBeNull();
    expect(keyUse("GET", "/v1/screening/jobs")).toBeNull();
    expect(keyUse("GET", "/v1/screening/active-job")).toBeNull();
    expect(keyUse("POST", undefined)).toBe("request");
  });
});
