import { describe, expect, it } from "vitest";
import { LocalRecords } from "@litrev/messaging";
import { inputBytes } from "./client/admission";
import { OwnerStorage } from "./owner-storage";

const MB = 1024 * 1024;
const DAY = 86_400_000;

/** Quotas on a clock the test moves, with the jobs the test says are live. */
function quotas(settings: { bytes: number; liveJobs: number; keptForMs?: number }) {
  let now = 10 * DAY;
  const live = new Set<string>();
  const ended = new Set<string>();
  const state = async (id: string) => (live.has(id) ? "active" : ended.has(id) ? "ended" : "none") as "active" | "ended" | "none";
  const storage = new OwnerStorage(new LocalRecords(), "screening", { keptForMs: 30 * DAY, ...settings }, state, () => now);
  const reserve = async (owner: string, id: string, input: number, results = 0) => {
    try {
      await storage.reserve(owner, id, { input: input * MB, results: results * MB });
      live.add(id);
      return null;
    } catch (error) {
      return error as { category: string; message: string; retryAfterMs?: number; simple?: boolean };
    }
  };
  const end = (id: string) => {
    live.delete(id);
    ended.add(id);
  };
  return { storage, reserve, live, end, advance: (ms: number) => (now += ms) };
}

describe("OwnerStorage", () => {
  it("refuses the owner who filled its quota, with a wait, and never another owner", async () => {
    const { reserve } = quotas({ bytes: 10 * MB, liveJobs: 100 });
    expect(await reserve("mallory", "a", 4, 2)).toBeNull();
    expect(await reserve("mallory", "b", 3)).toBeNull();
    const refused = await reserve("mallory", "c", 2);
    expect(refused).toMatchObject({ category: "rate_limit", retryAfterMs: 60_000 });
    expect(refused!.message).toMatch(/hold 9\.0 MB of storage; this one would add about 2\.0 MB, over its quota of 10\.0 MB \(OWNER_STORAGE_MB/);
    expect(await reserve("alice", "d", 9)).toBeNull();
  });

  it("answers a job larger than the whole quota with too_large (413: no retry helps)", async () => {
    const { reserve } = quotas({ bytes: 10 * MB, liveJobs: 100 });
    const refused = await reserve("alice", "huge", 8, 3);
    expect(refused).toMatchObject({ category: "too_large", simple: true });
    expect(refused!.message).toMatch(/about 11\.0 MB .* whole quota of 10\.0 MB \(OWNER_STORAGE_MB/);
  });

  it("bounds live jobs per owner, and frees a place once a job has ended or its state is gone", async () => {
    const { reserve, live, end, advance } = quotas({ bytes: 0, liveJobs: 2 });
    expect(await reserve("alice", "a", 1)).toBeNull();
    expect(await reserve("alice", "b", 1)).toBeNull();
    const refused = await reserve("alice", "c", 1);
    expect(refused).toMatchObject({ category: "rate_limit", retryAfterMs: 30_000 });
    expect(refused!.message).toMatch(/already has 2 jobs pending or running \(OWNER_MAX_LIVE_JOBS/);
    end("a");
    expect(await reserve("alice", "c", 1)).toBeNull();
    // A reservation without a live state is an admission still writing it, for a while; then it is gone.
    live.delete("b");
    expect(await reserve("alice", "d", 1)).not.toBeNull();
    advance(11_000);
    live.delete("c");
    end("c");
    expect(await reserve("alice", "d", 1)).toBeNull();
    expect(await reserve("alice", "e", 1)).toBeNull();
  });

  it("releases an ended job's input at once and its results when they expire", async () => {
    const { reserve, end, advance } = quotas({ bytes: 10 * MB, liveJobs: 100, keptForMs: 30 * DAY });
    expect(await reserve("alice", "a", 6, 3)).toBeNull();
    end("a");
    // 3 MB of results stay counted: 7 MB more fit, 8 do not.
    const refused = await reserve("alice", "b", 8);
    expect(refused).toMatchObject({ category: "rate_limit" });
    expect(refused!.retryAfterMs).toBe(86_400_000); // the results expire in a month; a day is the longest wait said
    expect(await reserve("alice", "b", 7)).toBeNull();
    end("b");
    advance(31 * DAY);
    expect(await reserve("alice", "c", 10)).toBeNull();
  });

  it("gives back the reservation of an admission that failed", async () => {
    const { storage, reserve } = quotas({ bytes: 10 * MB, liveJobs: 1 });
    expect(await reserve("alice", "a", 9)).toBeNull();
    await storage.cancel("alice", "a");
    expect(await reserve("alice", "b", 10)).toBeNull();
  });

  it("counts what a finished job's owner stores beside it (a validation sample) until it expires, refused over the quota", async () => {
    const { storage, reserve, end, advance } = quotas({ bytes: 10 * MB, liveJobs: 100, keptForMs: 30 * DAY });
    expect(await reserve("alice", "a", 2, 2)).toBeNull();
    end("a");
    for (let i = 0; i < 6; i++) await storage.keep("alice", MB, 2 * DAY);
    // 2 MB of results and 6 MB of samples: 2 MB more fit, 3 do not.
    expect(await reserve("alice", "b", 3)).toMatchObject({ category: "rate_limit" });
    await expect(storage.keep("alice", 3 * MB, 2 * DAY)).rejects.toMatchObject({ category: "rate_limit" });
    await expect(storage.keep("alice", 11 * MB, 2 * DAY)).rejects.toMatchObject({ category: "too_large" });
    expect(await reserve("bob", "c", 9)).toBeNull();
    advance(3 * DAY); // the samples expired, the results are still kept
    expect(await reserve("alice", "d", 7, 1)).toBeNull();
  });
});

describe("inputBytes", () => {
  it("counts a staged job's head (criteria, questions, field definitions) beside its staged papers", () => {
    const criteria = Array.from({ length: 50 }, (_, i) => `${i}: ${"c".repeat(25_000)}`);
    const staged = { object: "input", bytes: 10 * 1024 };
    expect(inputBytes({ staged, input: { criteria } })).toBeGreaterThan(staged.bytes + 50 * 25_000);
    expect(inputBytes({ input: { papers: [], criteria } })).toBe(Buffer.byteLength(JSON.stringify({ papers: [], criteria })));
  });
});
