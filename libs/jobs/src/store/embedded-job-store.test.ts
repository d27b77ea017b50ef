import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobNames } from "@litrev/contracts";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { EmbeddedJobStore } from "./embedded-job-store";
import { storedJob } from "./job-store.contract";
import { RetryingJobStore } from "./retrying-job-store";
import { waitFor } from "../../../../test/support/stack";

const logger = createLogger("embedded-store-test", process.env.TEST_LOG_LEVEL ?? "silent");


describe("embedded JetStream job store", { timeout: 90_000 }, () => {
  let storeDir: string;
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let store: EmbeddedJobStore;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-embedded-store-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url, reconnectTimeWait: 200, maxReconnectAttempts: -1 });
    store = await EmbeddedJobStore.open(nc, "indexer", { timeoutMs: 2_000, transferTimeoutMs: 30_000 });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    if (storeDir) rmSync(storeDir, { recursive: true, force: true });
  });

  it("describes itself for readiness", () => {
    expect(store.describe()).toBe("jetstream (embedded, R1)");
    expect(store.status()).toBe("ok");
  });

  it("erases with its job the items an older version stored beside the row", async () => {
    const job = storedJob({ status: "completed", fence: 1, service: "indexer" });
    await store.upsertJob(job);
    const objects = await new Objm(jetstream(nc)).open(jobNames("indexer").storeItemsBucket);
    await objects.putBlob({ name: `${job.job_id}/1/0` }, new TextEncoder().encode('[{"id":"a"}]'));
    await store.deleteJob(job.job_id);
    expect(await store.getJob(job.job_id)).toBeNull();
    expect((await objects.list()).filter((entry) => entry.name.startsWith(job.job_id))).toEqual([]);
  });

  it("stores a row too large for one message (its result and extras split off), reads, lists and deletes it whole", async () => {
    const errors = Array.from({ length: 12_000 }, (_, i) => `record r${i}: the model's reply named no field (${"x".repeat(60)})`);
    const job = { ...storedJob({ status: "completed", fence: 2, service: "indexer" }), result: { errors }, extra: { note: "ü".repeat(200_000) } };
    expect(JSON.stringify(job).length).toBeGreaterThan(900 * 1024);
    expect(await store.upsertJob(job)).toBe("written");
    expect(await store.getJob(job.job_id)).toEqual(job);
    expect((await store.listJobs(50)).find((row) => row.job_id === job.job_id)).toEqual(job);
    // A newer, small write of the same job replaces it (nothing of the split row is read back).
    const smaller = { ...job, fence: 3, result: { errors: [] }, extra: {} };
    expect(await store.upsertJob(smaller)).toBe("written");
    expect(await store.getJob(job.job_id)).toEqual(smaller);
    expect(await store.upsertJob({ ...job, fence: 4 })).toBe("written");
    await store.deleteJob(job.job_id);
    expect(await store.getJob(job.job_id)).toBeNull();
  });

  it("lists past index entries that are repeated or whose row is gone", async () => {
    const names = jobNames("indexer");
    const jobs = Array.from({ length: 6 }, () => storedJob({ status: "pending" }));
    for (const job of jobs) await store.upsertJob(job);
    const js = jetstream(nc);
    // A first write repeated after the de-duplication window, and an entry for a row that never landed.
    await js.publish(names.storeIndexSubject, JSON.stringify({ job_id: jobs[2]!.job_id, created_at: jobs[2]!.created_at }));
    await js.publish(names.storeIndexSubject, JSON.stringify({ job_id: "never-written", created_at: new Date().toISOString() }));
    await js.publish(names.storeIndexSubject, "not json");
    const listed = (await store.listJobs(4)).map((j) => j.job_id);
    expect(listed).toEqual([...jobs].reverse().slice(0, 4).map((j) => j.job_id));
  });

  it("refuses malformed job ids instead of building odd keys", async () => {
    await expect(store.upsertJob({ ...storedJob(), job_id: "a.b" })).rejects.toThrow(RangeError);
    expect(await store.getJob("a.*")).toBeNull();
  });

  it("throws during a NATS outage (never hangs), keeps failed writes, and survives the restart", async () => {
    const retrying = new RetryingJobStore(store, logger);
    const project = 4242;
    const before = storedJob({ projectId: project, status: "running", fence: 1 });
    await retrying.upsertJob(before);

    await server.stop();
    const started = Date.now();
    await expect(store.getJob(before.job_id)).rejects.toThrow();
    await expect(retrying.upsertJob({ ...before, status: "completed", progress: 1 })).rejects.toThrow();
    await expect(store.listJobs(10)).rejects.toThrow();
    await expect(store.activeJobs(project)).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(store.status()).toMatch(/^error: job store unavailable \(/);
    expect(retrying.status()).toMatch(/^error/);
    expect(retrying.pending).toBe(1);

    server = await startNatsServer({ port: server.port, storeDir });
    // The kept write lands once NATS is back; everything written before the restart is still there.
    await waitFor(() => retrying.pending === 0);
    expect(await store.getJob(before.job_id)).toMatchObject({ status: "completed", progress: 1 });
    expect(await store.activeJobs(project)).toEqual([]);
    expect(store.status()).toBe("ok");
    expect(retrying.status()).toBe("ok");

    // A fresh connection (another process) sees the same data.
    const other = await connect({ servers: server.url });
    try {
      const reopened = await EmbeddedJobStore.open(other, "indexer");
      expect(await reopened.getJob(before.job_id)).toMatchObject({ status: "completed" });
      expect((await reopened.listJobs(100)).some((j) => j.job_id === before.job_id)).toBe(true);
    } finally {
      await other.close();
    }
  });
});
