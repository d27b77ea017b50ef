import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobDataObjects, ServiceError } from "@litrev/contracts";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { readArtifactHead } from "./artifact";
import { admitJob } from "./client/admission";
import type { OwnerStorage } from "./owner-storage";
import { openJobInfra, type JobInfra } from "./infra";
import { cancelJob, deleteJob } from "./job-cancel";
import { KeySealer } from "./key-sealer";
import { newJobState } from "./state";
import { MemoryJobStore } from "./store/job-store";
import { cancellationOf, PartialFailure } from "./worker/errors";
import { JobWorker } from "./worker/job-worker";
import type { JobHandler } from "./worker/types";

const logger = createLogger("job-cancel-test", "silent");
const sealer = KeySealer.fromSecret("job-cancel-test-secret-0123456789");

async function waitFor<T>(check: () => Promise<T | null | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("cancel and delete against a real nats-server", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let service: NatsConnection;
  let replica: NatsConnection;
  let infra: JobInfra;
  let workerInfra: JobInfra;
  const store = new MemoryJobStore();

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-cancel-test-"));
    server = await startNatsServer({ storeDir });
    // The replica that takes the cancel and the one that runs the job: two connections.
    service = await connect({ servers: server.url });
    replica = await connect({ servers: server.url });
    infra = await openJobInfra(service, "indexer", { ackWaitMs: 3_000, maxAttempts: 2 });
    workerInfra = await openJobInfra(replica, "indexer", { ackWaitMs: 3_000, maxAttempts: 2 });
  });
  afterAll(async () => {
    await service?.close();
    await replica?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const admit = async (projectId: number, owner = "alice") => {
    const state = newJobState({ jobId: randomUUID(), service: "indexer", projectId, owner, modelVersion: "m", config: {}, estimatedCostUsd: 0 });
    expect((await admitJob(infra, store, { state, input: { records: [{ ID: "1" }] }, list: "records", logger })).ok).toBe(true);
    return state;
  };
  const deps = () => ({ infra, store, logger, waitMs: 8_000 });

  it("ends a pending job without a worker: artifact, row and live state, its command, lock and input gone", async () => {
    const state = await admit(501);
    expect(await infra.queue.isQueued(state.job_id)).toBe(true);
    const ended = await cancelJob(deps(), state.job_id, "alice");
    expect(ended).toMatchObject({ status: "failed", error: "Cancelled by the client", error_category: "cancelled", error_retryable: false });
    expect((await infra.registry.get(state.job_id))?.state.status).toBe("failed");
    expect(await readArtifactHead(infra.data, state.job_id)).toMatchObject({ owner: "alice", status: "failed" });
    expect(await store.getJob(state.job_id)).toMatchObject({ status: "failed", error_category: "cancelled" });
    expect(await infra.queue.isQueued(state.job_id)).toBe(false);
    expect(await infra.registry.lockHolder(501, "alice")).toBeNull();
    expect(await infra.data.getJson(`${jobDataObjects.input(state.job_id)}/head`)).toBeNull();
    // Ended: a second cancel is a conflict naming its status; another client's is not found.
    await expect(cancelJob(deps(), state.job_id, "alice")).rejects.toMatchObject({ category: "conflict", message: `Job ${state.job_id} is already failed` });
    await expect(cancelJob(deps(), state.job_id, "bob")).rejects.toMatchObject({ category: "not_found" });
  });

  it("stops a running job on another replica: its calls in flight aborted, what finished kept, the project freed", async () => {
    let started = 0;
    const handler: JobHandler = async (ctx) => {
      started++;
      const done = [{ ID: "a" }, { ID: "b" }];
      await ctx.partials.append(done);
      // A call in flight that only the job's signal ends; the handler keeps what finished, as the pipelines do.
      try {
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
      } catch (error) {
        const cancelled = cancellationOf(ctx.signal);
        throw cancelled ? new PartialFailure(cancelled, { items: done }) : error;
      }
      return {};
    };
    const worker = new JobWorker({ infra: workerInfra, store, sealer, logger, instance: "replica-2", handler });
    worker.start();
    try {
      const state = await admit(502);
      await waitFor(async () => (await infra.registry.get(state.job_id))?.state.status === "running");
      await expect(cancelJob(deps(), state.job_id, "bob")).rejects.toMatchObject({ category: "not_found" });
      const ended = await cancelJob(deps(), state.job_id, "alice");
      expect(ended).toMatchObject({ status: "failed", error_category: "cancelled", worker: "replica-2" });
      expect(started).toBe(1);
      // The store of record takes the row (it may land just after the state); the items are in the artifact.
      await waitFor(async () => (await store.getJob(state.job_id))?.status === "failed");
      expect(await readArtifactHead(infra.data, state.job_id)).toMatchObject({ status: "failed", items: { lines: 2 } });
      await waitFor(async () => (await infra.registry.lockHolder(502, "alice")) === null);
      // Deleting it leaves nothing: live state, artifact, row, items; its storage reservation is given back.
      const givenBack: string[][] = [];
      const storage = { cancel: async (owner: string, jobId: string) => void givenBack.push([owner, jobId]) } as unknown as OwnerStorage;
      await deleteJob({ ...deps(), storage }, state.job_id, "alice");
      expect(givenBack).toEqual([["alice", state.job_id]]);
      expect(await infra.registry.get(state.job_id)).toBeNull();
      expect(await readArtifactHead(infra.data, state.job_id)).toBeNull();
      expect(await store.getJob(state.job_id)).toBeNull();
      await expect(deleteJob(deps(), state.job_id, "alice")).rejects.toMatchObject({ category: "not_found" });
    } finally {
      await worker.stop();
    }
  });

  it("answers 504 when no worker stops the running job in time, and the mark makes the next run end it", async () => {
    const state = await admit(503);
    // A run that holds the job but never hears the cancel (its replica went quiet).
    const taken = await infra.registry.update(state.job_id, (s) => ({ ...s, status: "running", attempt: 1, worker: "gone" }));
    expect(taken?.written).toBe(true);
    const error = await cancelJob({ ...deps(), waitMs: 300 }, state.job_id, "alice").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).category).toBe("timeout");
    expect((await infra.registry.get(state.job_id))?.state.extra.cancel_requested_at).toEqual(expect.any(String));
    // The next delivery takes the job, sees the mark and ends it cancelled before its handler calls anything.
    const handler: JobHandler = async (ctx) => {
      await new Promise((_, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason);
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      });
      return {};
    };
    const worker = new JobWorker({ infra: workerInfra, store, sealer, logger, instance: "replica-3", handler });
    worker.start();
    try {
      const ended = await waitFor(async () => {
        const entry = await infra.registry.get(state.job_id);
        return entry && entry.state.status === "failed" ? entry.state : null;
      });
      expect(ended).toMatchObject({ error_category: "cancelled", worker: "replica-3" });
    } finally {
      await worker.stop();
    }
  });
});
