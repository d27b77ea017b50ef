import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { declaredBytes, StorageRefusals } from "./storage-refusals";

const overQuota = new ServiceError("rate_limit", "This client's jobs hold 4.9 MB of storage; this one would add about 1.2 MB, over its quota of 5.0 MB (OWNER_STORAGE_MB, docs/limits.md). Space frees …", { retryAfterMs: 60_000 });

describe("StorageRefusals", () => {
  it("refuses the owner's creations at least as large as the one refused for storage, until the service's Retry-After (60 s at most), with the service's words", () => {
    let now = 1_000;
    const refusals = new StorageRefusals(() => now);
    expect(refusals.note("screening", "mallory", 1_200_000, overQuota)).toBe(true);
    const again = refusals.check("screening", "mallory", 1_300_000);
    expect(again).toMatchObject({ category: "rate_limit", message: overQuota.message, retryAfterMs: 60_000 });
    expect(refusals.check("screening", "mallory", 10_000)).toBeNull(); // smaller: the service decides
    expect(refusals.check("screening", "alice", 1_300_000)).toBeNull(); // another owner
    expect(refusals.check("indexer", "mallory", 1_300_000)).toBeNull(); // another service's quota
    expect(refusals.check("screening", "mallory", undefined)).toBeNull(); // no declared length
    now += 59_000;
    expect(refusals.check("screening", "mallory", 1_200_000)?.retryAfterMs).toBe(1_000);
    now += 1_000;
    expect(refusals.check("screening", "mallory", 1_200_000)).toBeNull();
    // A shorter Retry-After is kept to; a longer one is cut to 60 s.
    refusals.note("screening", "mallory", 1_200_000, new ServiceError("rate_limit", overQuota.message, { retryAfterMs: 7_000 }));
    expect(refusals.check("screening", "mallory", 1_200_000)?.retryAfterMs).toBe(7_000);
    refusals.note("screening", "mallory", 1_200_000, new ServiceError("rate_limit", overQuota.message, { retryAfterMs: 86_400_000 }));
    expect(refusals.check("screening", "mallory", 1_200_000)?.retryAfterMs).toBe(60_000);
  });

  it("forgets an owner's refusal once their storage may have freed (a job of theirs ended or was deleted), and everyone's when told so", () => {
    const refusals = new StorageRefusals(() => 0);
    for (const owner of ["mallory", "carol"]) refusals.note("screening", owner, 1_200_000, overQuota);
    refusals.note("indexer", "mallory", 1_200_000, overQuota);
    refusals.forget("screening", "mallory");
    expect(refusals.check("screening", "mallory", 1_200_000)).toBeNull();
    expect(refusals.check("screening", "carol", 1_200_000)).not.toBeNull();
    expect(refusals.check("indexer", "mallory", 1_200_000)).not.toBeNull();
    refusals.forget("screening", null);
    expect(refusals.check("screening", "carol", 1_200_000)).toBeNull();
    expect(refusals.check("indexer", "mallory", 1_200_000)).not.toBeNull();
  });

  it("remembers storage refusals only (never another failure), and a job larger than the whole quota as the service answered it", () => {
    const refusals = new StorageRefusals(() => 0);
    refusals.note("screening", "a", 100, new ServiceError("rate_limit", "More than 40 requests per second from this client (KEY_RATE_PER_S, docs/limits.md)", { retryAfterMs: 100 }));
    refusals.note("screening", "b", 100, new ServiceError("service_unavailable", "No screening service is running"));
    refusals.note("screening", "c", 100, new Error("(OWNER_STORAGE_MB"));
    for (const owner of ["a", "b", "c"]) expect(refusals.check("screening", owner, 100)).toBeNull();
    const whole = new ServiceError("too_large", "This would store about 6.0 MB more, more than this client's whole quota of 5.0 MB (OWNER_STORAGE_MB, docs/limits.md): split it into smaller jobs", { simple: true });
    refusals.note("screening", "d", 100, whole);
    expect(refusals.check("screening", "d", 100)).toMatchObject({ category: "too_large", simple: true, message: whole.message });
  });

  it("reads a declared length only when it is one", () => {
    expect(declaredBytes("1200")).toBe(1200);
    for (const bad of [undefined, "", "-1", "1e99", "abc"]) expect(declaredBytes(bad)).toBeUndefined();
  });
});
