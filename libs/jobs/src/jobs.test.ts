import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobDataObjects, ServiceError } from "@litrev/contracts";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { admitJob, reapOrphans } from "./client/admission";
import { openJobInfra, type JobInfra } from "./infra";
import { keyBindings, KeySealer } from "./key-sealer";
import { JobMirror } from "./client/mirror";
import { applyProgress, newJobState } from "./state";
import { MemoryJobStore, type JsonRecord, type StoredJob, type UpsertOutcome } from "./store/job-store";
import { RetryingJobStore } from "./store/retrying-job-store";
import { JobWorker } from "./worker/job-worker";
import { artifactJob, readArtifactHead } from "./artifact";
import { OrphanSweep } from "./orphan-sweep";
import { artifactItems } from "./testing/artifact-items";
import type { JobHandler } from "./worker/types";
import { waitFor } from "../../../test/support/stack";

const logger = createLogger("jobs-test", process.env.TEST_LOG_LEVEL ?? "silent");
const sealer = KeySealer.fromSecret("unit-test-secret-0123456789");


describe("applyProgress", () => {
  it("never moves progress backwards and times each finished stage", () => {
    const t0 = new Date("2026-01-01T00:00:00Z");
    let s = newJobState({ jobId: "j", service: "screening", modelVersion: "m", config: { x: Number.NaN }, estimatedCostUsd: Infinity, now: t0 });
    expect(s.config.x).toBeNull();
    expect(s.estimated_cost_usd).toBeNull();
    s = applyProgress(s, { stage: "labelling", progress: 0.4 }, t0);
    s = applyProgress(s, { progress: 0.2 }, new Date(t0.getTime() + 10));
    expect(s.progress).toBe(0.4);
    s = applyProgress(s, { stage: "reasoning", progress: 0.5 }, new Date(t0.getTime() + 1500));
    expect(s.stage_timings).toEqual({ labelling: 1500 });
    expect(s.stage).toBe("reasoning");
  });
});

/** The store of record, unreachable while `down`. */
class FlakyStore extends MemoryJobStore {
  down = false;
  failed = 0;
  override async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    if (this.down) throw (this.failed++, new Error("connection refused"));
    return super.upsertJob(job);
  }
}

describe("durable jobs against a real nats-server", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let infra: JobInfra;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-jobs-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    infra = await openJobInfra(nc, "screening", { ackWaitMs: 1_500, maxAttempts: 2 });
  });
  // Closing waits for the server to drop the many-readers case's consumers: longer than a hook's default.
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }, 60_000);

  const pending = (projectId: number | null = null) =>
    newJobState({ jobId: randomUUID(), service: "screening", projectId, modelVersion: "llm-5-nano", config: {}, estimatedCostUsd: 0.01 });

  it("serves many reads of the job data store at once: each is a consumer, beyond nats-server 2.15's default of 1,000 per stream", async () => {
    // Fair-owners bench: under an attack's export storm, reads failed "maximum consumers limit
    // reached" (each object read is an ephemeral consumer, gone some seconds after it ends).
    const ref = await infra.data.putLines("many-readers", { n: 1 }, [{ id: "p1" }]);
    const results = await Promise.allSettled(Array.from({ length: 1_100 }, () => infra.data.readChunk(ref, 0)));
    const failures = results.flatMap((r) => (r.status === "rejected" ? [String((r.reason as Error).cause instanceof Error ? (r.reason as Error).cause : r.reason)] : []));
    expect(failures.slice(0, 2)).toEqual([]);
    await infra.data.deleteLines(ref);
  });

  it("admits one active job per project atomically and reaps orphans", async () => {
    const store = new MemoryJobStore();
    const attempts = await Promise.all(
      Array.from({ length: 20 }, () => admitJob(infra, store, { state: pending(42), input: { n: 1 }, logger })),
    );
    const winners = attempts.filter((a) => a.ok);
    expect(winners).toHaveLength(1);
    const winner = winners[0] as { ok: true; state: { job_id: string } };
    for (const loser of attempts.filter((a) => !a.ok)) {
      expect(loser).toEqual({ ok: false, conflict: { job_id: winner.state.job_id, status: "pending", owner: "default" } });
    }
    expect(await infra.queue.isQueued(winner.state.job_id)).toBe(true);
    expect((await store.getJob(winner.state.job_id))?.status).toBe("pending");

    // Its command disappears (e.g. a lost stream): after the lease it is an orphan.
    await infra.queue.discard(winner.state.job_id);
    expect(await reapOrphans(infra, store, 42, 60_000, logger, "default")).toEqual([]); // still within its lease
    const next = await admitJob(infra, store, { state: pending(42), input: {}, orphanLeaseMs: 0, logger });
    expect(next.ok).toBe(true);
    const orphan = await infra.registry.get(winner.state.job_id);
    expect(orphan?.state).toMatchObject({ status: "failed", error_category: "orphan_cleanup" });
    expect(orphan?.state.error).toMatch(/orphaned/);
    expect((await store.getJob(winner.state.job_id))?.status).toBe("failed");
    await infra.queue.discard((next as { state: { job_id: string } }).state.job_id);
  });

  it("rides out a store of record briefly down at the end: the terminal writes wait for it, then the live state is releasable", async () => {
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    const handler: JobHandler = async () => {
      inner.down = true;
      setTimeout(() => (inner.down = false), 1_000);
      return { items: [{ v: 1 }, { v: 2 }], result: { total: 2 } };
    };
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w-store", handler });
    worker.start();
    const state = pending(8);
    expect((await admitJob(infra, store, { state, input: {}, logger })).ok).toBe(true);
    const done = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "completed" ? e : null;
    });
    await worker.stop();
    expect(inner.failed).toBeGreaterThan(0);
    // Stored within the wait: no result object, and a first poll may release the live state.
    expect(done.state).toMatchObject({ result: null, releasable: true });
    expect(await artifactItems(infra.data, state.job_id)).toEqual([{ v: 1 }, { v: 2 }]);
    expect(await inner.getJob(state.job_id)).toMatchObject({ status: "completed", result: { total: 2 } });
    expect(store.pending).toBe(0);
    await store.close();
  });

  it("hands the finished row to the store even when the store stays down past the terminal writes' wait: no row stuck at running", { timeout: 60_000 }, async () => {
    // Unreachable until the test says: longer than the worker waits for it.
    const inner = new FlakyStore();
    const store = new RetryingJobStore(inner, logger);
    // Three chunks of results: every one is in the artifact, whatever the store does.
    const results = Array.from({ length: 1_200 }, (_, v) => ({ v }));
    const handler: JobHandler = async () => {
      inner.down = true;
      return { items: results, result: { total: 2 } };
    };
    // A short wait stands for the 30 s one: the outage outlasts it either way.
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w-down", handler, storeWaitMs: 200 });
    worker.start();
    // As every kind admits: its list chunked (an input stored whole is read again for each result item's texts).
    const state = pending(9);
    expect((await admitJob(infra, store, { state, input: { papers: [] }, list: "papers", logger })).ok).toBe(true);
    expect((await inner.getJob(state.job_id))?.status).toBe("pending");
    // The run gave up waiting: the live state says completed (its artifact holds the results), the
    // store of record has not taken the row yet.
    await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "completed" ? e : null;
    }, 50_000);
    expect(inner.failed).toBeGreaterThan(0);
    inner.down = false;
    // The store is back: the kept row lands (the results are in the artifact already).
    const row = await waitFor(async () => {
      const stored = await inner.getJob(state.job_id);
      return stored?.status === "completed" ? stored : null;
    }, 5_000).catch(async () => inner.getJob(state.job_id));
    expect(row).toMatchObject({ status: "completed", result: { total: 2 } });
    expect(await artifactItems(infra.data, state.job_id)).toEqual(results);
    await worker.stop();
    await store.close();
  });

  it("runs a job to completion, stores its result, frees the project and removes checkpoints", async () => {
    const store = new MemoryJobStore();
    const seenKeys: (string | undefined)[] = [];
    const handler: JobHandler = async (ctx) => {
      seenKeys.push(ctx.providerKey);
      const input = await ctx.input<{ values: number[] }>();
      await ctx.report({ stage: "first", progress: 0.1 });
      await ctx.checkpoints.save("first", "0", { partial: input.values[0] });
      await ctx.report({ stage: "second", progress: 0.6 });
      expect((await ctx.checkpoints.load("first")).get("0")).toEqual({ partial: 1 });
      return { items: input.values.map((v) => ({ v, sq: v * v })), result: { total: input.values.length }, extra: { note: "done" } };
    };
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w1", handler });
    worker.start();
    const state = pending(7);
    const admitted = await admitJob(infra, store, {
      state,
      input: { values: [1, 2, 3] },
      sealedProviderKey: sealer.seal("sk-client", keyBindings.job(infra.service, state.job_id)),
      
      logger,
    });
    expect(admitted.ok).toBe(true);
    const done = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "completed" ? e : null;
    });
    await worker.stop();
    expect(seenKeys).toEqual(["sk-client"]);
    // Only the sealed form was kept for the worker.
    expect(JSON.stringify(done.state)).not.toContain("sk-client");
    expect(done.state).toMatchObject({ progress: 1, stage: "Complete", extra: { note: "done" } });
    expect(Object.keys(done.state.stage_timings).sort()).toEqual(["first", "second"]);
    expect(done.state.duration_ms).toBeGreaterThanOrEqual(0);
    // The artifact holds the results, so the live state carries no copy and may be released.
    expect(done.state).toMatchObject({ result: null, releasable: true });
    expect(await artifactItems(infra.data, state.job_id)).toEqual([{ v: 1, sq: 1 }, { v: 2, sq: 4 }, { v: 3, sq: 9 }]);
    expect(await infra.registry.lockHolder(7, state.owner)).toBeNull();
    expect(await infra.checkpoints.load(state.job_id, "first")).toEqual(new Map());
    expect(await infra.queue.isQueued(state.job_id)).toBe(false);
    expect(await infra.data.getJson(jobDataObjects.input(state.job_id))).toBeNull();
        expect(await store.getJob(state.job_id)).toMatchObject({ status: "completed", result: { total: 3 } });
    // The finished artifact: the items in the one chunk format, the head (written last) with owner, status and report.
    const head = await readArtifactHead(infra.data, state.job_id);
    expect(head).toMatchObject({ owner: state.owner, status: "completed", items: { lines: 3, chunks: 1 }, report: { outcomes: { items: 3 } } });
    const items: JsonRecord[] = [];
    for await (const chunk of artifactJob(infra.data, head!).chunks()) items.push(...chunk);
    expect(items).toEqual([{ v: 1, sq: 1 }, { v: 2, sq: 4 }, { v: 3, sq: 9 }]);
    // The live entry stays until the sweep finds the artifact in place and the job ended a lease ago.
    const sweep = new OrphanSweep(infra, store, { leaseMs: 200, intervalMs: 60_000, logger });
    await waitFor(async () => (await sweep.sweep(), (await infra.registry.get(state.job_id)) === null));
  });

  it("answers a job whose store of record stays down from its artifact: the results never wait in the live state", async () => {
    class DownStore extends MemoryJobStore {
      override async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
        if (job.status === "completed") throw new Error("connection refused");
        return super.upsertJob(job);
      }
    }
    const store = new DownStore();
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w-down", handler: async () => ({ items: [{ v: 1 }, { v: 2 }], result: { total: 2 } }) });
    worker.start();
    const state = pending(9);
    expect((await admitJob(infra, store, { state, input: {}, logger })).ok).toBe(true);
    const done = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "completed" ? e : null;
    });
    await worker.stop();
    expect(done.state).toMatchObject({ result: null, releasable: true });
    const head = await readArtifactHead(infra.data, state.job_id);
    expect(head?.record).toMatchObject({ status: "completed", result: { total: 2 } });
    expect(head?.items.lines).toBe(2);
  });

  it("delivers a job again when a NATS request fails inside its run, instead of failing it", async () => {
    const store = new MemoryJobStore();
    let runs = 0;
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "w-infra",
      handler: async (ctx) => {
        await ctx.checkpoints.save("only", String(runs), { run: runs });
        // The first run meets a NATS request that timed out (a cluster electing a leader, say).
        if (runs++ === 0) throw new ServiceError("unknown", "Unexpected server error", { cause: new errors.TimeoutError() });
        return { items: [], result: { resumed: (await ctx.checkpoints.load("only")).size } };
      },
    });
    worker.start();
    const state = pending();
    await admitJob(infra, store, { state, input: {}, logger });
    const done = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && (e.state.status === "completed" || e.state.status === "failed") ? e : null;
    }, 15_000);
    await worker.stop();
    expect(done.state.status).toBe("completed");
    expect(runs).toBe(2);
    // The second run saw the first run's checkpoint (it resumed; nothing was thrown away).
    expect(await store.getJob(state.job_id)).toMatchObject({ status: "completed", result: { resumed: 2 } });
  });

  it("records a classified failure", async () => {
    const store = new MemoryJobStore();
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "w2",
      handler: async () => {
        throw new ServiceError("auth", "The provider rejected the API key");
      },
    });
    worker.start();
    const state = pending();
    await admitJob(infra, store, { state, input: {}, logger });
    const failed = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "failed" ? e : null;
    });
    await worker.stop();
    expect(failed.state).toMatchObject({ error_category: "auth", error_retryable: false, error: "The provider rejected the API key" });
    expect(failed.state.completed_at).toBeTruthy();
  });

  it("hands a job back at once on graceful stop; the next worker resumes from checkpoints", async () => {
    const store = new MemoryJobStore();
    const worked: string[] = [];
    const handlerFor = (name: string): JobHandler => async (ctx) => {
      const done = await ctx.checkpoints.load<string>("units");
      for (let unit = 0; unit < 6; unit++) {
        if (done.has(String(unit))) continue;
        await new Promise((r) => setTimeout(r, 150));
        if (ctx.signal.aborted) throw ctx.signal.reason;
        worked.push(`${name}:${unit}`);
        await ctx.checkpoints.save("units", String(unit), name);
        await ctx.report({ stage: "units", progress: (unit + 1) / 6 });
      }
      return { items: [] };
    };
    const first = new JobWorker({ infra, store, sealer, logger, instance: "a", handler: handlerFor("a") });
    first.start();
    const state = pending();
    await admitJob(infra, store, { state, input: {}, logger });
    await waitFor(() => worked.length >= 2);
    const stoppedAt = Date.now();
    await first.stop();
    const second = new JobWorker({ infra, store, sealer, logger, instance: "b", handler: handlerFor("b") });
    second.start();
    const done = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "completed" ? e : null;
    });
    await second.stop();
    // Resumed well within the ack wait (1.5 s would apply to a crash), and no unit ran twice.
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    const units = worked.map((w) => w.split(":")[1]);
    expect(new Set(units).size).toBe(units.length);
    expect(units.sort()).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect(worked.some((w) => w.startsWith("b:"))).toBe(true);
    expect(done.state.handoffs).toBeGreaterThanOrEqual(1); // the stopping worker's open pull may hand it back once more
  });

  it("fails a job whose deliveries are exhausted by crashes", async () => {
    const store = new MemoryJobStore();
    const state = pending();
    await admitJob(infra, store, { state, input: {}, logger });
    // Two deliveries taken and never acknowledged: what a worker killed twice looks like.
    const consumer = await infra.js.consumers.get(infra.names.commandStream, infra.names.consumer);
    for (let i = 0; i < 2; i++) {
      const msg = await waitFor(() => consumer.next({ expires: 2_000 }));
      expect(msg.info.deliveryCount).toBe(i + 1);
    }
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "c", handler: async () => ({}) });
    worker.start();
    const failed = await waitFor(async () => {
      const e = await infra.registry.get(state.job_id);
      return e && e.state.status === "failed" ? e : null;
    });
    await worker.stop();
    expect(failed.state.error).toMatch(/abandoned.*2 delivery attempts/);
    await waitFor(async () => !(await infra.queue.isQueued(state.job_id)));
  });

  it("mirrors live state and lets exactly one reader remove a terminal job", async () => {
    const mirror = await JobMirror.open(nc, "screening", logger);
    const state = { ...pending(99), status: "completed" as const };
    await infra.registry.create(state);
    const seen = await waitFor(() => mirror.get(state.job_id));
    expect(seen.state.status).toBe("completed");
    const results = await Promise.all([mirror.removeIfUnchanged(state.job_id, seen), mirror.removeIfUnchanged(state.job_id, seen)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await mirror.fetch(state.job_id)).toBeNull();
    expect(await mirror.fetch(randomUUID())).toBeNull();
    mirror.stop();
  });
});
