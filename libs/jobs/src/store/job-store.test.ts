import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "@litrev/telemetry";
import { newJobState } from "../state";
import { MemoryJobStore, NoJobStore, toStoredJob, type JobStore } from "./job-store";
import { MongoJobStore, openJobStore } from "./mongo-job-store";

const logger = createLogger("job-store-test", "silent");

function stored(projectId: number | null, createdAt: string, status: "pending" | "running" | "completed" = "pending") {
  const state = newJobState({ jobId: randomUUID(), service: "screening", projectId, modelVersion: "m", config: { papers_count: 2 }, estimatedCostUsd: 0.5, now: new Date(createdAt) });
  return toStoredJob({ ...state, status }, { clusters: [{ cluster_id: 0, score: Number.NaN }] });
}

/** The behaviour every persistent store must have (MemoryJobStore always; MongoDB when MONGO_URL is set). */
function contract(name: string, open: () => Promise<JobStore>) {
  describe(`${name} store contract`, () => {
    let store: JobStore;
    afterAll(async () => store?.close());

    it("upserts by job id, lists newest first, finds a project's active jobs and keeps items in order", async () => {
      store = await open();
      const project = Math.floor(Math.random() * 1e9);
      const older = stored(project, "2026-01-01T00:00:00.000Z", "running");
      const newer = stored(project, "2026-01-02T00:00:00.000Z", "completed");
      await store.upsertJob(older);
      await store.upsertJob(newer);
      await store.upsertJob({ ...older, progress: 0.5 });
      expect((await store.getJob(older.job_id))?.progress).toBe(0.5);
      expect(await store.getJob(randomUUID())).toBeNull();
      const listed = (await store.listJobs(1000)).filter((j) => j.project_id === project);
      expect(listed.map((j) => j.job_id)).toEqual([newer.job_id, older.job_id]);
      expect((await store.activeJobs(project)).map((j) => j.job_id)).toEqual([older.job_id]);

      const items = Array.from({ length: 2_500 }, (_, i) => ({ id: `p${i}`, final_score: i % 6, weird: i === 7 ? Number.POSITIVE_INFINITY : 1 }));
      await store.replaceItems(newer.job_id, items);
      await store.replaceItems(newer.job_id, items); // idempotent on redelivery
      const back = await store.getItems(newer.job_id);
      expect(back).toHaveLength(2_500);
      expect(back[0]).toMatchObject({ id: "p0" });
      expect(back[2_499]).toMatchObject({ id: "p2499" });
      expect(store.status()).toBe("ok");
    });
  });
}

contract("memory", async () => new MemoryJobStore());

const mongoUrl = process.env.MONGO_URL;
if (mongoUrl) {
  contract("mongodb", () => MongoJobStore.connect({ url: mongoUrl, database: `litrev_test_${process.pid}`, jobs: "jobs", items: "items" }));
  it("stores NaN and infinities as null in MongoDB", async () => {
    const store = await MongoJobStore.connect({ url: mongoUrl, database: `litrev_test_${process.pid}`, jobs: "jobs", items: "items" });
    const job = stored(null, "2026-01-03T00:00:00.000Z");
    await store.upsertJob({ ...job, estimated_cost_usd: Number.NaN });
    const back = await store.getJob(job.job_id);
    expect(back?.estimated_cost_usd).toBeNull();
    expect((back?.result?.clusters as { score: unknown }[])[0]!.score).toBeNull();
    await store.close();
  });
} else {
  it.skip("MongoDB store contract: needs MongoDB (set MONGO_URL to run it)", () => undefined);
  console.log("[job-store.test] skipping the MongoDB store contract: MONGO_URL is not set (no MongoDB server on this machine)");
}

describe("without persistence", () => {
  it("keeps nothing and says why in readiness", async () => {
    const none = new NoJobStore();
    await none.upsertJob(stored(1, "2026-01-01T00:00:00.000Z"));
    expect(await none.listJobs(10)).toEqual([]);
    expect(none.persistent).toBe(false);
    expect(none.status()).toMatch(/^error: .*persistence/);
  });

  it("continues without persistence, with one warning, when MongoDB is unreachable", async () => {
    const started = Date.now();
    const store = await openJobStore({ url: "mongodb://127.0.0.1:1/litrev", jobs: "j", items: "i", logger, serverSelectionTimeoutMS: 500 });
    expect(store.kind).toBe("none");
    expect(store.status()).toMatch(/^error: database unreachable/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
