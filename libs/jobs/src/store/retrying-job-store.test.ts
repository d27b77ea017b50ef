import { describe, expect, it } from "vitest";
import { createLogger } from "@litrev/telemetry";
import { newJobState } from "../state";
import { MemoryJobStore, toStoredJob, type StoredJob, type UpsertOutcome } from "./job-store";
import { RetryingJobStore } from "./retrying-job-store";

const logger = createLogger("retrying-store-test", process.env.TEST_LOG_LEVEL ?? "silent");

/** A MemoryJobStore whose writes fail while `down` (a database outage), optionally slowly. */
class FlakyStore extends MemoryJobStore {
  down = false;
  delayMs = 0;
  calls = 0;
  override async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    this.calls++;
    await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.down) throw new Error("connection refused");
    return super.upsertJob(job);
  }
}

const job = (id: string, status: StoredJob["status"], progress: number, fence = 0): StoredJob => ({
  ...toStoredJob(newJobState({ jobId: id, service: "screening", modelVersion: "m", config: {}, estimatedCostUsd: 0 }), null, fence),
  status,
  progress,
});

const until = async (check: () => boolean, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("RetryingJobStore", () => {
  it("keeps writes that fail during an outage and writes them once the database is back", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    await expect(store.upsertJob(job("a", "running", 0.5))).rejects.toThrow();
    await expect(store.upsertJob(job("a", "completed", 1))).rejects.toThrow();
    await expect(store.upsertJob(job("b", "pending", 0))).rejects.toThrow();
    expect(store.pending).toBe(2); // the newest write per job
    expect(store.status()).toMatch(/^error/);

    await new Promise((r) => setTimeout(r, 150)); // retries while still down change nothing
    expect(inner.jobs.size).toBe(0);
    inner.down = false;
    await until(() => store.pending === 0);
    expect(inner.jobs.get("a")).toMatchObject({ status: "completed", progress: 1 });
    expect(inner.jobs.get("b")).toMatchObject({ status: "pending" });
    expect(store.status()).toBe("ok");
    await store.close();
  });

  it("never lets a retried older write overwrite a newer one", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    await expect(store.upsertJob(job("c", "running", 0.2))).rejects.toThrow();
    // Back, but slow: the retry of the old write and the newer write race.
    inner.down = false;
    inner.delayMs = 30;
    await new Promise((r) => setTimeout(r, 15));
    await store.upsertJob(job("c", "completed", 1));
    await until(() => store.pending === 0);
    await new Promise((r) => setTimeout(r, 100));
    expect(inner.jobs.get("c")).toMatchObject({ status: "completed", progress: 1 });
    await store.close();
  });

  it("tries once more on close and reports what could not be written", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    await expect(store.upsertJob(job("d", "completed", 1))).rejects.toThrow();
    inner.down = false;
    await store.close();
    expect(inner.jobs.get("d")).toMatchObject({ status: "completed" });
  });

  it("treats a stale outcome as final: returned, not kept, not retried", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    expect(await store.upsertJob(job("e", "running", 0.1, 2))).toBe("written");
    expect(await store.upsertJob(job("e", "running", 0.9, 1))).toBe("stale");
    expect(store.pending).toBe(0);
    const calls = inner.calls;
    await new Promise((r) => setTimeout(r, 60));
    expect(inner.calls).toBe(calls);
    expect(inner.jobs.get("e")).toMatchObject({ fence: 2, progress: 0.1 });
    await store.close();
  });

  it("keeps the write the fencing rule would keep: a later lower-fence write does not displace it", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    await expect(store.upsertJob(job("f", "completed", 1, 3))).rejects.toThrow();
    await expect(store.upsertJob(job("f", "running", 0.5, 2))).rejects.toThrow();
    inner.down = false;
    await store.flush();
    expect(store.pending).toBe(0);
    expect(inner.jobs.get("f")).toMatchObject({ status: "completed", fence: 3 });
    await store.close();
  });

  it("does not keep a write the store refuses as malformed (it would fail forever)", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    await expect(store.upsertJob(job("g", "running", 0.1, -1))).rejects.toThrow(RangeError);
    await expect(store.upsertJob(job("g", "running", 0.1, 1.5))).rejects.toThrow(RangeError);
    expect(store.pending).toBe(0);
    expect(store.status()).toBe("ok");
    await store.close();
  });
  it("retries a write given a wait until it lands, without keeping it meanwhile", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    setTimeout(() => (inner.down = false), 300);
    const written = store.upsertJob(job("h", "completed", 1, 1), { budgetMs: 10_000 });
    await new Promise((r) => setTimeout(r, 100));
    expect(store.pending).toBe(1); // waiting for the store, as readiness says
    await expect(written).resolves.toBe("written");
    expect(inner.calls).toBeGreaterThan(1);
    expect(store.pending).toBe(0);
    const calls = inner.calls;
    await new Promise((r) => setTimeout(r, 300));
    expect(inner.calls).toBe(calls); // nothing was kept, so nothing is written again
    await store.close();
  });

  it("keeps a write whose wait ran out, and writes it in the background once the store is back", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    await expect(store.upsertJob(job("i", "completed", 1, 1), { budgetMs: 300 })).rejects.toThrow("connection refused");
    expect(store.pending).toBe(1);
    inner.down = false;
    await until(() => store.pending === 0);
    expect(inner.jobs.get("i")).toMatchObject({ status: "completed", fence: 1 });
    await store.close();
  });

  it("returns a stale outcome within a wait at once, and never retries a malformed write", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    await store.upsertJob(job("j", "running", 0.5, 3));
    const calls = inner.calls;
    expect(await store.upsertJob(job("j", "running", 0.6, 2), { budgetMs: 10_000 })).toBe("stale");
    await expect(store.upsertJob(job("j", "running", 0.6, -1), { budgetMs: 10_000 })).rejects.toThrow(RangeError);
    expect(inner.calls).toBe(calls + 2);
    expect(store.pending).toBe(0);
    await store.close();
  });

  it("on close, cuts a wait short, keeps its write and tries it once more", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    inner.down = true;
    const waiting = store.upsertJob(job("k", "completed", 1, 1), { budgetMs: 60_000 });
    const outcome = waiting.then(
      () => "written",
      () => "rejected",
    );
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const closed = store.close();
    const calls = inner.calls;
    await closed;
    expect(await outcome).toBe("rejected");
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(inner.calls).toBe(calls + 1); // the last try at close
    expect(store.pending).toBe(1); // still down: reported as lost at shutdown
  });

  it("says the waiting writes are saved only once they are, not while a write that replaced a kept one is still failing", async () => {
    const lines: string[] = [];
    const recording = { info: (message: string) => lines.push(message), warn: (message: string) => lines.push(message), error: () => undefined } as never;
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, recording);
    inner.down = true;
    await expect(store.upsertJob(job("a", "running", 0.5))).rejects.toThrow();
    inner.delayMs = 100;
    // A newer write replaces the kept one and is still on its way to the (down) store as a flush runs.
    const newer = store.upsertJob(job("a", "running", 0.7));
    await new Promise((r) => setTimeout(r, 20));
    await store.flush();
    await expect(newer).rejects.toThrow();
    expect(lines.filter((line) => /saved/.test(line))).toEqual([]);
    inner.down = false;
    inner.delayMs = 0;
    await until(() => store.pending === 0);
    await until(() => lines.some((line) => /saved/.test(line)));
    expect(inner.jobs.get("a")).toMatchObject({ progress: 0.7 });
    await store.close();
  });
});
