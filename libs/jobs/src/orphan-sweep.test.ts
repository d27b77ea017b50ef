import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobStateKeys, type JobRunCommand, type JobService } from "@litrev/contracts";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { waitFor } from "../../../test/support/stack";
import { admitJob } from "./client/admission";
import { openJobInfra, type JobInfra } from "./infra";
import { OrphanSweep } from "./orphan-sweep";
import { JobQueue } from "./queue";
import { openServiceJobs, type ServiceJobs } from "./service-jobs";
import { newJobState } from "./state";
import { EmbeddedJobStore } from "./store/embedded-job-store";
import type { JobStore } from "./store/job-store";

const logger = createLogger("orphan-sweep-test", process.env.TEST_LOG_LEVEL ?? "silent");
// Generous beside the admission's heartbeat (a third of it), so a loaded machine does not make a live admission look dead.
const LEASE_MS = 1_500;

/**
 * The chaos checker's `ghost`: an admission killed or cut off from NATS after it wrote the job's
 * pending state and row but before it queued the command. Its client was told 504, so nobody polls
 * the job; the owning service's orphan sweep must end it, for every job kind.
 */
describe("orphan sweep against a real nats-server", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  const services = new Map<JobService, ServiceJobs>();

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-orphan-sweep-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    for (const service of ["indexer", "screening"] as const) {
      services.set(
        service,
        await openServiceJobs(nc, service, {
          mongoUrl: undefined,
          ackWaitMs: 2_000,
          maxAttempts: 2,
          retentionMs: 3_600_000,
          storeRetentionMs: 3_600_000,
          orphanLeaseMs: LEASE_MS,
          orphanSweepMs: 200,
          logger,
        }),
      );
    }
  });
  afterAll(async () => {
    for (const jobs of services.values()) await jobs.close();
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }, 30_000);

  const jobsOf = (service: JobService) => services.get(service)!;
  const pending = (service: JobService, projectId: number, owner: string) =>
    newJobState({ jobId: randomUUID(), service, projectId, owner, modelVersion: "llm-5-nano", config: {}, estimatedCostUsd: 0.01 });

  /**
   * Admits `state` from a process of its own (its own NATS connection, state bucket handles and
   * store) that loses NATS for good at the moment it queues the command: the pending state and the
   * row are written, the command never is, and nothing of that process writes again.
   */
  async function interruptedAdmission(service: JobService, state: ReturnType<typeof pending>): Promise<void> {
    const cut = await connect({ servers: server.url });
    const infra: JobInfra = await openJobInfra(cut, service, { ackWaitMs: 2_000, maxAttempts: 2 });
    const store = await EmbeddedJobStore.open(cut, service, { timeoutMs: 1_000 });
    const queue = Object.create(infra.queue) as JobQueue;
    queue.submit = async (command: JobRunCommand) => {
      await cut.close();
      return JobQueue.prototype.submit.call(infra.queue, command);
    };
    await expect(admitJob({ ...infra, queue }, store, { state, input: { records: [1, 2] }, orphanLeaseMs: LEASE_MS, logger })).rejects.toThrow();
  }

  it("fails an indexer job whose admission was cut off before queueing its command (no project lock, no later creation)", async () => {
    const jobs = jobsOf("indexer");
    const state = pending("indexer", 7001, "client-a");
    await interruptedAdmission("indexer", state);

    // The ghost as the chaos run saw it: listed pending, its command not queued.
    expect((await jobs.infra.registry.get(state.job_id))?.state.status).toBe("pending");
    expect(await jobs.infra.queue.isQueued(state.job_id)).toBe(false);
    expect((await jobs.store.listJobs(10, "client-a")).find((j) => j.job_id === state.job_id)?.status).toBe("pending");

    const row = await waitFor(async () => {
      const stored = await jobs.store.getJob(state.job_id);
      return stored?.status === "failed" ? stored : null;
    }, 10_000);
    expect(row.error_category).toBe("orphan_cleanup");
    expect(row.error).toMatch(/never queued: its admission was interrupted/);
    expect((await jobs.store.listJobs(10, "client-a")).find((j) => j.job_id === state.job_id)?.status).toBe("failed");
    // The live state is failed too, and releasable once the row holds the failure: a poll ends it.
    const live = await waitFor(async () => {
      const entry = await jobs.infra.registry.get(state.job_id);
      return entry?.state.releasable ? entry.state : null;
    });
    expect(live).toMatchObject({ status: "failed", error_category: "orphan_cleanup", error: row.error });
    expect(await jobs.reader.get(state.job_id, "client-a")).toMatchObject({ status: "failed", error_category: "orphan_cleanup" });
  });

  it("fails a screening ghost the same way and frees its project for the owner", async () => {
    const jobs = jobsOf("screening");
    const state = pending("screening", 7002, "client-b");
    await interruptedAdmission("screening", state);
    expect((await jobs.infra.registry.lockHolder(7002, "client-b"))?.lock.job_id).toBe(state.job_id);

    await waitFor(async () => (await jobs.store.getJob(state.job_id))?.status === "failed", 10_000);
    expect((await jobs.infra.registry.get(state.job_id))?.state.status).toBe("failed");
    await waitFor(async () => (await jobs.infra.registry.lockHolder(7002, "client-b")) === null);
  });

  it("leaves a slow admission alone: its job keeps beating until the command is queued", async () => {
    const jobs = jobsOf("indexer");
    const state = pending("indexer", 7003, "client-a");
    const queue = Object.create(jobs.infra.queue) as JobQueue;
    queue.submit = async (command: JobRunCommand) => {
      await sleep(LEASE_MS * 3); // many sweeps pass meanwhile
      return JobQueue.prototype.submit.call(jobs.infra.queue, command);
    };
    const admitted = await admitJob({ ...jobs.infra, queue }, jobs.store, { state, input: { records: [1] }, orphanLeaseMs: LEASE_MS, logger });
    expect(admitted.ok).toBe(true);
    expect(await jobs.infra.queue.isQueued(state.job_id)).toBe(true);
    expect((await jobs.infra.registry.get(state.job_id))?.state.status).toBe("pending");
    expect((await jobs.store.getJob(state.job_id))?.status).toBe("pending");
    await jobs.infra.queue.discard(state.job_id);
  });

  it("leaves a queued job alone however long it waits for a worker", async () => {
    const jobs = jobsOf("indexer");
    const state = pending("indexer", 7004, "client-a");
    expect((await admitJob(jobs.infra, jobs.store, { state, input: { records: [1] }, orphanLeaseMs: LEASE_MS, logger })).ok).toBe(true);
    await sleep(LEASE_MS * 2);
    expect(await jobs.sweep.sweep()).not.toContain(state.job_id);
    expect((await jobs.infra.registry.get(state.job_id))?.state.status).toBe("pending");
    await jobs.infra.queue.discard(state.job_id);
  });
});

describe("orphan sweep stop", () => {
  it("ends a pass whose key listing waits for its end, at once", async () => {
    // A KV key listing whose last key never comes (as when keys change under it): it ends only when stopped.
    let stopped!: () => void;
    const ended = new Promise<void>((resolve) => (stopped = resolve));
    const listing = {
      stop: () => stopped(),
      async *[Symbol.asyncIterator]() {
        yield jobStateKeys.job("one");
        await ended;
      },
    };
    let listings = 0;
    const infra = {
      service: "indexer",
      registry: { kv: { keys: async () => (listings++, listing) } },
    } as unknown as JobInfra;
    const sweep = new OrphanSweep(infra, {} as JobStore, { leaseMs: 1_000, intervalMs: 10, logger });
    sweep.start();
    await waitFor(async () => listings > 0, 2_000);
    const stopping = sweep.stop().then(() => "stopped");
    expect(await Promise.race([stopping, sleep(2_000).then(() => "still listing")])).toBe("stopped");
  });
});
