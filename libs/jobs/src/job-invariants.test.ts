import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { JsMsg } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { jobDataObjects, ServiceError } from "@litrev/contracts";
import { LocalRecords } from "@litrev/messaging";
import { createLogger, metrics } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { admitJob, reapOrphans } from "./client/admission";
import { OwnerStorage } from "./owner-storage";
import { openJobInfra, type JobInfra } from "./infra";
import { KeySealer } from "./key-sealer";
import { newJobState } from "./state";
import { MemoryJobStore, toStoredJob, type StoredJob } from "./store/job-store";
import { JobWorker } from "./worker/job-worker";
import { JobRun } from "./worker/job-run";
import { CheckpointedStage } from "./worker/unit-loop";
import { artifactItems } from "./testing/artifact-items";
import { waitFor } from "../../../test/support/stack";

/**
 * The job invariants that a read of the code found broken (issue "Jobs core"), each as a test
 * against a real nats-server: a worker that lost its lease touches nothing; a terminal state is in
 * the store of record before the live state says so; admission takes a project once however slow
 * its upload; a registry update that wrote nothing is not counted.
 */

const logger = createLogger("job-invariants-test", process.env.TEST_LOG_LEVEL ?? "silent");
const sealer = KeySealer.fromSecret("unit-test-secret-0123456789");


describe("job invariants against a real nats-server", { timeout: 60_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let infra: JobInfra;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-job-invariants-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    infra = await openJobInfra(nc, "screening", { ackWaitMs: 5_000, maxAttempts: 3 });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const pending = (projectId: number | null = null) =>
    newJobState({ jobId: randomUUID(), service: "screening", projectId, modelVersion: "llm-5-nano", config: {}, estimatedCostUsd: 0.01 });

  /** Another worker takes the job over, as a redelivery after a stall would. */
  async function takeOver(jobId: string, by: string) {
    const taken = await infra.registry.update(jobId, (s) => ({ ...s, attempt: s.attempt + 1, worker: by, heartbeat_at: new Date().toISOString() }));
    await infra.checkpoints.fence(jobId, taken!.state.attempt);
    await infra.checkpoints.save(jobId, "units", "new-owner", { by }, taken!.state.attempt);
  }

  it("a worker whose lease was taken over and whose handler then fails leaves the new owner's job alone", async () => {
    const store = new MemoryJobStore();
    const state = pending(501);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "stale",
      handler: async (ctx) => {
        await gate;
        throw new ServiceError("unknown", `the stale run of ${ctx.jobId} fails`);
      },
    });
    worker.start();
    // Stored, so the stale run could (wrongly) delete it.
    await admitJob(infra, store, { state, input: { n: 1 }, logger });
    await waitFor(async () => (await infra.registry.get(state.job_id))?.state.worker === "stale");
    await takeOver(state.job_id, "new-owner");
    release();
    await waitFor(() => worker.running.length === 0);
    await worker.stop();

    const live = await infra.registry.get(state.job_id);
    expect(live?.state).toMatchObject({ status: "running", worker: "new-owner" });
    expect((await infra.checkpoints.load(state.job_id, "units")).get("new-owner")).toEqual({ by: "new-owner" });
    expect(await infra.data.getJson(jobDataObjects.input(state.job_id))).toMatchObject({ n: 1 });
    expect((await infra.registry.lockHolder(501, state.owner))?.lock.job_id).toBe(state.job_id);
    expect((await store.getJob(state.job_id))?.status).not.toBe("failed");
    await infra.queue.discard(state.job_id);
  });

  it("a worker whose lease was taken over and whose handler then succeeds writes no result anywhere", async () => {
    const store = new MemoryJobStore();
    const state = pending(502);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "stale",
      handler: async () => {
        await gate;
        return { items: [{ from: "stale" }], result: { from: "stale" } };
      },
    });
    worker.start();
    await admitJob(infra, store, { state, input: { n: 2 }, logger });
    await waitFor(async () => (await infra.registry.get(state.job_id))?.state.worker === "stale");
    await takeOver(state.job_id, "new-owner");
    release();
    await waitFor(() => worker.running.length === 0);
    await worker.stop();

    expect(await infra.data.getJson(jobDataObjects.artifactHead(state.job_id))).toBeNull();
    expect((await store.getJob(state.job_id))?.status).not.toBe("completed");
    expect((await infra.registry.get(state.job_id))?.state).toMatchObject({ status: "running", worker: "new-owner" });
    expect((await infra.checkpoints.load(state.job_id, "units")).size).toBe(1);
    await infra.queue.discard(state.job_id);
  });

  it("saves of one run share their lease checks (a fast provider's job saves hundreds of units a second), and a run whose lease was taken stops at its next save", async () => {
    // Another service's queue: this run is left unacknowledged, and no other test's worker may get it.
    const own = await openJobInfra(nc, "indexer", { ackWaitMs: 5_000, maxAttempts: 3 });
    const store = new MemoryJobStore();
    const state = { ...pending(504), service: "indexer" as const };
    const reads = vi.spyOn(own.registry, "get");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let after: unknown;
    let leaseReads = 0;
    const worker = new JobWorker({
      infra: own, store, sealer, logger, instance: "saver",
      handler: async (ctx) => {
        await sleep(100); // past the reuse window of the lease the run confirmed as it took the job
        reads.mockClear();
        await Promise.all(Array.from({ length: 200 }, (_, i) => ctx.checkpoints.save("units", String(i), { i })));
        leaseReads = reads.mock.calls.filter(([id]) => id === ctx.jobId).length;
        await gate;
        await sleep(100); // past the reuse window: the next save reads the live state again
        after = await ctx.checkpoints.save("units", "after", { late: true }).catch((error: unknown) => error);
        throw after;
      },
    });
    try {
      worker.start();
      await admitJob(own, store, { state, input: { n: 3 }, logger });
      await waitFor(async () => (await own.checkpoints.load(state.job_id, "units")).size === 200);
      const taken = await own.registry.update(state.job_id, (s) => ({ ...s, attempt: s.attempt + 1, worker: "new-owner", heartbeat_at: new Date().toISOString() }));
      await own.checkpoints.fence(state.job_id, taken!.state.attempt);
      release();
      await waitFor(() => worker.running.length === 0);
    } finally {
      await worker.stop();
      reads.mockRestore();
    }
    expect(leaseReads).toBeGreaterThanOrEqual(1);
    expect(leaseReads).toBeLessThan(20);
    expect((after as Error).name).toBe("LeaseLostError");
    expect((await own.checkpoints.load(state.job_id, "units")).get("after")).toBeUndefined();
    await own.queue.discard(state.job_id);
  });

  it("a run cut off from NATS past half its ack wait sends no provider call when the link heals, whatever its saves do (chaos seed 399435)", async () => {
    // Another service's queue again (the test above discarded its job).
    const own = await openJobInfra(nc, "indexer", { ackWaitMs: 5_000, maxAttempts: 3 });
    const store = new MemoryJobStore();
    const state = { ...pending(508), service: "indexer" as const };
    const calls: number[] = [];
    // The cut: the run's live-state reads and writes and its checkpoint saves hang until the link
    // heals; the saves come back first (each retried on its own backoff), the live state 300 ms later.
    let cut = false;
    let healSaves!: () => void;
    const savesHealed = new Promise<void>((resolve) => (healSaves = resolve));
    const stateHealed = savesHealed.then(() => sleep(300));
    // The other side of the cut: the run that takes the job over.
    const other = await openJobInfra(nc, "indexer", { ackWaitMs: 5_000, maxAttempts: 3 });
    const get = own.registry.get.bind(own.registry);
    const update = own.registry.update.bind(own.registry);
    const save = own.checkpoints.save.bind(own.checkpoints);
    const spies = [
      vi.spyOn(own.registry, "get").mockImplementation(async (...args) => (cut && (await stateHealed), get(...args))),
      vi.spyOn(own.registry, "update").mockImplementation(async (...args) => (cut && (await stateHealed), update(...args))),
      vi.spyOn(own.checkpoints, "save").mockImplementation(async (...args) => (cut && (await savesHealed), save(...args))),
    ];
    let outcome: unknown;
    const worker = new JobWorker({
      infra: own, store, sealer, logger, instance: "cut-off",
      handler: async (ctx) => {
        const stage = await CheckpointedStage.open<{ n: number }>(ctx, "units");
        await stage
          .run<number>({
            units: Array.from({ length: 10_000 }, (_, i) => i),
            concurrency: 2,
            key: String,
            run: async (n) => {
              calls.push(Date.now());
              await sleep(5);
              return { n };
            },
            settle: () => undefined,
          })
          .catch((error: unknown) => (outcome = error));
        throw outcome;
      },
    });
    let healedAt = 0;
    try {
      worker.start();
      await admitJob(own, store, { state, input: { n: 1 }, logger });
      await waitFor(() => calls.length >= 20);
      cut = true;
      await sleep(3_000); // past half the ack wait: the job may have passed to another run
      const taken = await other.registry.update(state.job_id, (s) => ({ ...s, attempt: s.attempt + 1, worker: "new-owner", heartbeat_at: new Date().toISOString() }));
      await other.checkpoints.fence(state.job_id, taken!.state.attempt);
      healedAt = Date.now();
      healSaves();
      await waitFor(() => worker.running.length === 0, 20_000);
    } finally {
      cut = false;
      healSaves();
      await worker.stop();
      for (const spy of spies) spy.mockRestore();
    }
    expect((outcome as Error).name).toBe("LeaseLostError");
    expect(calls.filter((at) => at >= healedAt)).toEqual([]);
    await own.queue.discard(state.job_id);
  });

  it("a terminal state reaches the store of record before the live state shows it", async () => {
    // A slow database: every write lands 300 ms after it is made.
    const store = new (class extends MemoryJobStore {
      override async upsertJob(job: StoredJob) {
        await sleep(300);
        return super.upsertJob(job);
      }
    })();
    const state = pending(503);
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w", handler: async () => ({ items: [{ id: "a" }], result: { n: 1 } }) });
    worker.start();
    await admitJob(infra, store, { state, input: {}, logger });
    await waitFor(async () => (await infra.registry.get(state.job_id))?.state.status === "completed", 20_000);
    // Whoever sees the live terminal state (a first poll that then releases it) may rely on the store.
    const stored = await store.getJob(state.job_id);
    await worker.stop();
    expect(stored?.status).toBe("completed");
    expect(await artifactItems(infra.data, state.job_id)).toEqual([{ id: "a" }]);
  });

  it("a terminal row reaches the store of record only once the job's artifact (its items' only home) is in place", async () => {
    const headAtTerminalRow: unknown[] = [];
    const store = new (class extends MemoryJobStore {
      override async upsertJob(job: StoredJob) {
        if (job.status === "completed") headAtTerminalRow.push(await infra.data.getJson(jobDataObjects.artifactHead(job.job_id)));
        return super.upsertJob(job);
      }
    })();
    const state = pending(504);
    const worker = new JobWorker({ infra, store, sealer, logger, instance: "w", handler: async () => ({ items: [{ id: "a" }], result: {} }) });
    worker.start();
    await admitJob(infra, store, { state, input: {}, logger });
    await waitFor(async () => (await infra.registry.get(state.job_id))?.state.status === "completed", 20_000);
    await worker.stop();
    expect(headAtTerminalRow).toHaveLength(1);
    expect(headAtTerminalRow[0]).toMatchObject({ status: "completed", items: { lines: 1 } });
  });

  it("an admission whose input upload is slow still holds its project against a second admission", async () => {
    const store = new MemoryJobStore();
    const putJson = infra.data.putJson.bind(infra.data);
    const slow = vi.spyOn(infra.data, "putJson").mockImplementation(async (name, value) => {
      if ((value as { slow?: boolean })?.slow) await sleep(11_000);
      return putJson(name, value);
    });
    try {
      const first = admitJob(infra, store, { state: pending(504), input: { slow: true }, logger });
      await sleep(10_500);
      const second = await admitJob(infra, store, { state: pending(504), input: {}, logger });
      const winner = await first;
      expect(winner.ok).toBe(true);
      expect(second.ok).toBe(false);
      if (winner.ok) await infra.queue.discard(winner.state.job_id);
      if (second.ok) await infra.queue.discard(second.state.job_id);
    } finally {
      slow.mockRestore();
    }
  });

  it("an admission that finds a lock stale removes it only if its holder has not confirmed it meanwhile (never two active jobs)", async () => {
    const store = new MemoryJobStore();
    const first = pending(505);
    const create = infra.registry.create.bind(infra.registry);
    const removeLock = infra.registry.removeLockIfUnchanged.bind(infra.registry);
    let firstDone: Promise<unknown> = Promise.resolve();
    // The first admission stalls between taking the lock and writing its state, past the settle time…
    const slowCreate = vi.spyOn(infra.registry, "create").mockImplementation(async (state) => {
      if (state.job_id === first.job_id) await sleep(5_000);
      return create(state);
    });
    // …and the second, having judged that lock stale, removes it only after the first has finished.
    const lateRemove = vi.spyOn(infra.registry, "removeLockIfUnchanged").mockImplementation(async (...args) => {
      await Promise.race([firstDone, sleep(10_000)]);
      return removeLock(...args);
    });
    try {
      firstDone = admitJob(infra, store, { state: first, input: {}, logger });
      await sleep(3_300);
      const second = await admitJob(infra, store, { state: pending(505), input: {}, logger });
      const winner = (await firstDone) as Awaited<ReturnType<typeof admitJob>>;
      const admitted = [winner, second].filter((r) => r.ok);
      for (const r of admitted) if (r.ok) await infra.queue.discard(r.state.job_id);
      expect(admitted).toHaveLength(1);
    } finally {
      slowCreate.mockRestore();
      lateRemove.mockRestore();
    }
  });

  it("a failure that wrote nothing (the job was already terminal) is not counted again", async () => {
    const store = new MemoryJobStore();
    const state = pending();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "w",
      handler: async () => {
        await gate;
        throw new ServiceError("unknown", "late failure");
      },
    });
    worker.start();
    await admitJob(infra, store, { state, input: {}, logger });
    await waitFor(async () => (await infra.registry.get(state.job_id))?.state.status === "running");
    // Ended meanwhile by someone else (an orphan reaper, an operator): the run's failure writes nothing.
    await infra.registry.update(state.job_id, (s) => ({ ...s, status: "failed", error: "ended elsewhere", completed_at: new Date().toISOString() }));
    const counted = vi.spyOn(metrics, "jobsByStatus");
    try {
      release();
      await waitFor(() => worker.running.length === 0);
      expect(counted.mock.calls.filter(([, status]) => status === "failed")).toEqual([]);
    } finally {
      counted.mockRestore();
      await worker.stop();
    }
    expect((await infra.registry.get(state.job_id))?.state.error).toBe("ended elsewhere");
  });

  it("an orphan reaper whose look-ups were slow never overwrites a job that finished meanwhile", async () => {
    // A store whose active-job look-up takes a second (a store timing out), during which the job ends.
    const store = new (class extends MemoryJobStore {
      override async activeJobs(projectId: number, owner?: string) {
        const rows = await super.activeJobs(projectId, owner);
        await sleep(1_000);
        return rows;
      }
    })();
    const state = pending(506);
    const admitted = await admitJob(infra, store, { state, input: {}, logger });
    expect(admitted.ok).toBe(true);
    // It looks like an orphan: running, not heard of for long, its command gone.
    const old = new Date(Date.now() - 60_000).toISOString();
    await infra.registry.update(state.job_id, (s) => ({ ...s, status: "running", attempt: 1, worker: "w", heartbeat_at: old }));
    await infra.queue.discard(state.job_id);

    const reaping = reapOrphans(infra, store, 506, 1_000, logger, state.owner);
    await sleep(300);
    // Meanwhile its worker finishes it the way a worker does: store first, then live, then the release.
    const done = (await infra.registry.get(state.job_id))!.state;
    const completed = { ...done, status: "completed" as const, progress: 1, completed_at: new Date().toISOString(), releasable: true };
    await store.upsertJob(toStoredJob(completed, {}, 1));
    await infra.registry.update(state.job_id, () => completed);
    await infra.registry.releaseLock(506, state.job_id, state.owner);
    await infra.registry.remove(state.job_id);

    expect(await reaping).toEqual([]);
    expect((await store.getJob(state.job_id))?.status).toBe("completed");
  });

  it("a queue submit that fails after the row was saved leaves no pending row behind (J3)", async () => {
    const store = new MemoryJobStore();
    const state = pending(507);
    const submit = vi.spyOn(infra.queue, "submit").mockRejectedValueOnce(new Error("the work queue refused the command"));
    try {
      await expect(admitJob(infra, store, { state, input: { n: 7 }, logger })).rejects.toThrow(/refused/);
    } finally {
      submit.mockRestore();
    }
    // The client got an error and no job id: the row must not sit `pending` until retention sweeps it.
    const row = await store.getJob(state.job_id);
    expect(row === null || row.status === "failed").toBe(true);
    expect(await store.activeJobs(507)).toEqual([]);
    expect((await store.listJobs(100)).filter((j) => j.status === "pending")).toEqual([]);
    // Everything else is released too: no live state, no lock, no input; the project takes a new job.
    expect(await infra.registry.get(state.job_id)).toBeNull();
    expect(await infra.registry.lockHolder(507, state.owner)).toBeNull();
    const next = await admitJob(infra, store, { state: pending(507), input: {}, logger });
    expect(next.ok).toBe(true);
    if (next.ok) await infra.queue.discard(next.state.job_id);
  });

  it("the project slot is per owner: concurrent creations win once per owner, and reaping stays within the owner (T1)", async () => {
    const store = new MemoryJobStore();
    const as = (owner: string | undefined) =>
      newJobState({ jobId: randomUUID(), service: "screening", projectId: 508, owner, modelVersion: "llm-5-nano", config: {}, estimatedCostUsd: 0.01 });
    const owners = ["alice", "bob", undefined] as const;
    const attempts = await Promise.all(owners.flatMap((owner) => Array.from({ length: 6 }, () => admitJob(infra, store, { state: as(owner), input: {}, logger }))));
    const winners = new Map<string, string>();
    for (const [i, attempt] of attempts.entries()) {
      const owner = owners[Math.floor(i / 6)] ?? "default";
      if (attempt.ok) {
        expect(winners.has(owner), owner).toBe(false);
        winners.set(owner, attempt.state.job_id);
      } else {
        // A conflict only ever names the requester's own job.
        expect(attempt.conflict.owner, owner).toBe(owner);
      }
    }
    expect([...winners.keys()].sort()).toEqual(["alice", "bob", "default"]);
    for (const attempt of attempts) if (!attempt.ok) expect(attempt.conflict.job_id).toBe(winners.get(attempt.conflict.owner ?? "default"));
    // A single key (the default owner) keeps the key it always had.
    expect((await infra.registry.lockHolder(508, undefined))?.lock.job_id).toBe(winners.get("default"));
    expect((await infra.registry.lockHolder(508, "alice"))?.lock.job_id).toBe(winners.get("alice"));

    // Bob's job turns orphan (its command gone, long unheard of): Alice's next creation does not reap it, Bob's does.
    const bob = winners.get("bob")!;
    for (const id of winners.values()) await infra.queue.discard(id);
    const old = new Date(Date.now() - 60_000).toISOString();
    await infra.registry.update(bob, (s) => ({ ...s, heartbeat_at: old }));
    expect(await reapOrphans(infra, store, 508, 1_000, logger, "alice")).toEqual([]);
    expect((await infra.registry.get(bob))?.state.status).toBe("pending");
    expect(await reapOrphans(infra, store, 508, 1_000, logger, "bob")).toEqual([bob]);
    expect((await store.getJob(bob))?.status).toBe("failed");
    expect(await infra.registry.lockHolder(508, "bob")).toBeNull();
    expect((await infra.registry.lockHolder(508, "alice"))?.lock.job_id).toBe(winners.get("alice"));
  });

  it("a checkpoint a run saves just after losing its lease is not loaded by the run that took over (J1)", async () => {
    const store = new MemoryJobStore();
    const state = pending();
    let releaseStale!: () => void;
    const staleGate = new Promise<void>((resolve) => (releaseStale = resolve));
    let releaseNew!: () => void;
    const newGate = new Promise<void>((resolve) => (releaseNew = resolve));
    let newStarted!: () => void;
    const started = new Promise<void>((resolve) => (newStarted = resolve));
    let seen: Map<string, unknown> | undefined;

    // The run that takes over: a second delivery of the same command, on another process.
    const deps = { infra, store, sealer, logger, instance: "new-owner", reportIntervalMs: 250 };
    const fakeMsg = { info: { deliveryCount: 2 }, ack() {}, nak() {}, term() {}, working() {} } as unknown as JsMsg;
    const command = { version: 1 as const, type: "job.run" as const, service: "screening" as const, job_id: state.job_id, submitted_at: new Date().toISOString(), input: null, sealed_provider_key: null, params: {} };
    let takeOver: Promise<void> | undefined;
    const newRun = new JobRun(
      {
        ...deps,
        handler: async (ctx) => {
          newStarted();
          await newGate;
          seen = await ctx.checkpoints.load("units");
          return { items: [] };
        },
      },
      state.job_id,
      fakeMsg,
    );

    // The stale run's save is check-then-write: the take-over lands between its lease check and its publish.
    const realSave = infra.checkpoints.save.bind(infra.checkpoints);
    const save = vi.spyOn(infra.checkpoints, "save").mockImplementation(async (...args: Parameters<typeof realSave>) => {
      if (args[2] === "late") {
        takeOver = newRun.execute(command);
        await started;
      }
      return realSave(...args);
    });
    const worker = new JobWorker({
      infra, store, sealer, logger, instance: "stale",
      handler: async (ctx) => {
        await ctx.checkpoints.save("units", "early", { by: "stale" });
        await staleGate;
        await ctx.checkpoints.save("units", "late", { by: "stale" }).catch(() => undefined);
        return { items: [] };
      },
    });
    try {
      worker.start();
      await admitJob(infra, store, { state, input: {}, logger });
      await waitFor(async () => (await infra.checkpoints.load(state.job_id, "units")).has("early"));
      releaseStale();
      await waitFor(() => takeOver !== undefined && worker.running.length === 0);
      releaseNew();
      await takeOver;
    } finally {
      save.mockRestore();
      await worker.stop();
    }
    // Saved under the lease: kept. Saved after the take-over: ignored, though it reached the stream.
    expect(seen?.get("early")).toEqual({ by: "stale" });
    expect(seen?.has("late")).toBe(false);
    expect((await infra.registry.get(state.job_id))?.state).toMatchObject({ status: "completed", worker: "new-owner" });
  });
  it("an older delivery leaves a job alone while a later delivery's run holds it with a live lease, and takes it once that lease is stale", async () => {
    const store = new MemoryJobStore();
    const state = pending();
    await admitJob(infra, store, { state, input: {}, logger });
    const command = { version: 1 as const, type: "job.run" as const, service: "screening" as const, job_id: state.job_id, submitted_at: new Date().toISOString(), input: null, sealed_provider_key: null, params: {} };
    const settled: string[] = [];
    const msg = (deliveryCount: number) =>
      ({ info: { deliveryCount }, ack: () => settled.push("ack"), nak: () => settled.push("nak"), term: () => settled.push("term"), working() {} }) as unknown as JsMsg;
    let handled = 0;
    const run = (deliveryCount: number) =>
      new JobRun({ infra, store, sealer, logger, instance: "paused", reportIntervalMs: 250, handler: async () => (handled++, { items: [] }) }, state.job_id, msg(deliveryCount));
    // The run of delivery 3 holds the job and heartbeats; delivery 1 reaches a worker that was paused meanwhile.
    const holdByLater = (heartbeatAt: Date) =>
      infra.registry.update(state.job_id, (s) => ({ ...s, status: "running", attempt: 3, worker: "later", heartbeat_at: heartbeatAt.toISOString() }));
    await holdByLater(new Date());
    await run(1).execute(command);
    expect(handled).toBe(0);
    expect(settled).toEqual([]); // the command is the later run's to settle
    expect((await infra.registry.get(state.job_id))?.state).toMatchObject({ status: "running", attempt: 3, worker: "later" });
    // That run went silent for longer than the ack wait: any delivery takes the job.
    await holdByLater(new Date(Date.now() - 10_000));
    await run(2).execute(command);
    expect(handled).toBe(1);
    expect((await infra.registry.get(state.job_id))?.state).toMatchObject({ status: "completed", worker: "paused" });
    await infra.queue.discard(state.job_id);
  });

  it("admission reserves the owner's storage before storing anything, and a refused admission gives its reservation back", async () => {
    const quota = new OwnerStorage(new LocalRecords(), "screening", { bytes: 10_000, liveJobs: 10, keptForMs: 60_000 }, async (id) => ((await infra.registry.get(id)) ? "active" : "none"));
    const admit = (owner: string, resultBytes: number, jobId: string = randomUUID()) =>
      admitJob(infra, new MemoryJobStore(), {
        state: newJobState({ jobId, service: "screening", projectId: null, owner, modelVersion: "m", config: {}, estimatedCostUsd: null }),
        input: { papers: ["p"] },
        storage: { quota, resultBytes },
        logger,
      });
    expect((await admit("alice", 6_000)).ok).toBe(true);
    await expect(admit("alice", 6_000)).rejects.toMatchObject({ category: "rate_limit", message: expect.stringMatching(/OWNER_STORAGE_MB/) });
    await expect(admit("alice", 20_000)).rejects.toMatchObject({ category: "too_large" });
    expect((await admit("bob", 6_000)).ok).toBe(true); // another owner is untouched
    // An admission that fails after its reservation (its job id taken: the live state cannot be created) holds nothing afterwards.
    const taken = randomUUID();
    expect((await admit("carol", 1_000, taken)).ok).toBe(true);
    await expect(admit("carol", 8_000, taken)).rejects.toThrow();
    expect((await admit("carol", 8_000)).ok).toBe(true);
  });
});
