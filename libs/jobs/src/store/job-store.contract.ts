import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { JobService, JobStatus } from "@litrev/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJobState } from "../state";
import { toStoredJob, type JobStore, type StoredJob } from "./job-store";

export interface ContractSubject {
  /**
   * A store over the same data each time it is called (a second call must see the first one's
   * writes); `service` names the kind whose store it is (default screening).
   */
  open(service?: JobService): Promise<JobStore>;
  /** Called once after the suite. */
  cleanUp?(): Promise<void>;
}

let clock = Date.parse("2026-03-01T00:00:00.000Z");
/** Distinct, increasing creation times, so "newest first" is well defined. */
const nextCreatedAt = () => new Date((clock += 1_000)).toISOString();

export function storedJob(
  options: { projectId?: number | null; status?: JobStatus; fence?: number; createdAt?: string; owner?: string; service?: JobService } = {},
): StoredJob {
  const state = newJobState({
    jobId: randomUUID(),
    service: options.service ?? "screening",
    projectId: options.projectId ?? null,
    owner: options.owner,
    modelVersion: "m",
    config: { papers_count: 2 },
    estimatedCostUsd: 0.5,
    now: new Date(options.createdAt ?? nextCreatedAt()),
  });
  return { ...toStoredJob(state, null, options.fence ?? 0), status: options.status ?? "pending" };
}

const newProject = () => Math.floor(Math.random() * 1e9);

/**
 * The behaviour every persistent JobStore must have, run by `job-store.test.ts` against the memory,
 * embedded (JetStream) and MongoDB stores. Each case uses fresh job ids and project ids, so the
 * cases share one store without interfering.
 */
export function jobStoreContract(name: string, subject: ContractSubject | (() => ContractSubject | undefined), options: { skip?: string } = {}) {
  const suite = options.skip ? describe.skip : describe;
  suite(`${name} store contract${options.skip ? ` (skipped: ${options.skip})` : ""}`, { timeout: 60_000 }, () => {
    let store: JobStore;
    let subjectOf: ContractSubject;
    beforeAll(async () => {
      const resolved = typeof subject === "function" ? subject() : subject;
      if (!resolved) throw new Error(`${name}: no store to test`);
      subjectOf = resolved;
      store = await subjectOf.open();
    }, 30_000);
    afterAll(async () => {
      await store?.close();
      await subjectOf?.cleanUp?.();
    });

    it("upserts by job id and reads back, with null for an unknown job", async () => {
      const job = storedJob({ status: "running" });
      expect(await store.upsertJob(job)).toBe("written");
      expect(await store.upsertJob({ ...job, progress: 0.5 })).toBe("written");
      expect(await store.getJob(job.job_id)).toEqual({ ...job, progress: 0.5 });
      expect(await store.getJob(randomUUID())).toBeNull();
      expect(store.status()).toBe("ok");
      expect(store.describe()).toMatch(/\w/);
    });

    it("fences: a higher fence wins, a lower one is stale, the same fence cannot go terminal → active", async () => {
      const job = storedJob({ status: "pending", fence: 0 });
      expect(await store.upsertJob(job)).toBe("written");
      expect(await store.upsertJob({ ...job, status: "running", fence: 2, progress: 0.2 })).toBe("written");
      expect(await store.upsertJob({ ...job, status: "running", fence: 1, progress: 0.9 })).toBe("stale");
      expect(await store.getJob(job.job_id)).toMatchObject({ fence: 2, progress: 0.2 });

      expect(await store.upsertJob({ ...job, status: "failed", fence: 2, error: "boom" })).toBe("written");
      expect(await store.upsertJob({ ...job, status: "running", fence: 2, progress: 0.3 })).toBe("stale");
      expect(await store.upsertJob({ ...job, status: "completed", fence: 2, progress: 1 })).toBe("written"); // terminal → terminal, same run
      expect(await store.getJob(job.job_id)).toMatchObject({ status: "completed", fence: 2 });
    });

    it("never moves a row back from terminal: a take-over's late running row is stale, a newer run's terminal row lands", async () => {
      // A run that took the job over after the first run stored its terminal row (its ack was late)
      // saves a running row at a higher fence: listings must not show the job running again.
      const project = newProject();
      const job = storedJob({ projectId: project, status: "running", fence: 1 });
      expect(await store.upsertJob(job)).toBe("written");
      expect(await store.upsertJob({ ...job, status: "completed", fence: 1, progress: 1 })).toBe("written");
      expect(await store.upsertJob({ ...job, status: "running", fence: 2, progress: 0.1 })).toBe("stale");
      expect(await store.upsertJob({ ...job, status: "pending", fence: 3 })).toBe("stale");
      expect(await store.getJob(job.job_id)).toMatchObject({ status: "completed", fence: 1, progress: 1 });
      expect(await store.activeJobs(project)).toEqual([]);
      expect((await store.listJobs(1_000)).find((j) => j.job_id === job.job_id)).toMatchObject({ status: "completed" });
      // Terminal to terminal stays allowed for a newer run (its own results, written under its fence).
      expect(await store.upsertJob({ ...job, status: "completed", fence: 2, progress: 1, result: { run: 2 } })).toBe("written");
      expect(await store.getJob(job.job_id)).toMatchObject({ status: "completed", fence: 2, result: { run: 2 } });
    });

    it("ends consistent when 10 writers upsert one job at once", async () => {
      // Writers on separate store instances (separate connections where the store has them), so
      // that their read-decide-write steps truly interleave; many jobs, so that they do at least once.
      const writers = [store, await subjectOf.open(), await subjectOf.open()];
      try {
        for (let round = 0; round < 20; round++) {
          const project = newProject();
          const job = storedJob({ projectId: project, status: "pending" });
          // Fences 0..4, each as running and completed: only the completed fence-4 write may end on
          // top — or, in every other pair of rounds, a failed fence-5 write (a newer run ending it).
          // Nothing active may end on top of a terminal row, so activeJobs finds none.
          const writes = Array.from({ length: 10 }, (_, i) => ({
            ...job,
            fence: Math.floor(i / 2),
            status: (i % 2 === 0 ? "running" : "completed") as JobStatus,
            progress: i / 10,
          }));
          const reactivated = round % 4 >= 2;
          if (reactivated) writes[0] = { ...job, fence: 5, status: "failed", progress: 0.05 };
          const winner = reactivated ? writes[0]! : writes.find((w) => w.fence === 4 && w.status === "completed")!;
          if (round % 2 === 0) writes.reverse();
          const outcomes = await Promise.all(
            writes.map(async (w, i) => {
              await sleep(Math.random() * 3);
              return writers[i % writers.length]!.upsertJob(w);
            }),
          );
          const final = await store.getJob(job.job_id);
          expect(final, `round ${round}`).toEqual(winner);
          expect(outcomes[writes.indexOf(winner)], `round ${round}`).toBe("written");
          // Whatever the interleaving, the active index agrees with the row.
          expect(await store.activeJobs(project), `round ${round}`).toEqual([]);
        }
      } finally {
        await Promise.all(writers.slice(1).map((w) => w.close()));
      }
    });

    it("lists newest created_at first, up to limit, also beyond limit jobs and after many updates", async () => {
      const jobs = Array.from({ length: 12 }, () => storedJob({ status: "pending" }));
      for (const job of jobs) await store.upsertJob(job);
      // The oldest ones are updated many times after the newer ones were created.
      for (let round = 1; round <= 8; round++) {
        for (const job of jobs.slice(0, 3)) {
          expect(await store.upsertJob({ ...job, status: "running", progress: round / 10, fence: 1 })).toBe("written");
        }
      }
      const newestFirst = [...jobs].reverse().map((j) => j.job_id);
      expect((await store.listJobs(5)).map((j) => j.job_id)).toEqual(newestFirst.slice(0, 5));
      expect((await store.listJobs(1)).map((j) => j.job_id)).toEqual(newestFirst.slice(0, 1));
      expect(await store.listJobs(0)).toEqual([]);
      const all = (await store.listJobs(1_000)).map((j) => j.job_id);
      const ours = all.filter((id) => newestFirst.includes(id));
      expect(ours).toEqual(newestFirst);
      expect(new Set(all).size).toBe(all.length);
      const updated = (await store.listJobs(1_000)).find((j) => j.job_id === jobs[0]!.job_id);
      expect(updated).toMatchObject({ status: "running", progress: 0.8 });
    });

    it("lists one owner's jobs only, newest first; a row without an owner is the default owner's", async () => {
      const alice = `alice-${randomUUID().slice(0, 8)}`;
      const bob = `bob-${randomUUID().slice(0, 8)}`;
      const mine = Array.from({ length: 4 }, () => storedJob({ owner: alice }));
      const theirs = Array.from({ length: 6 }, () => storedJob({ owner: bob }));
      const { owner: _dropped, ...legacy } = storedJob();
      for (const job of [mine[0]!, ...theirs.slice(0, 3), mine[1]!, mine[2]!, ...theirs.slice(3), mine[3]!, legacy as StoredJob]) await store.upsertJob(job);
      const newestFirst = [...mine].reverse().map((j) => j.job_id);
      expect((await store.listJobs(10, alice)).map((j) => j.job_id)).toEqual(newestFirst);
      expect((await store.listJobs(2, alice)).map((j) => j.job_id)).toEqual(newestFirst.slice(0, 2));
      expect((await store.listJobs(100, bob)).map((j) => j.job_id)).toEqual([...theirs].reverse().map((j) => j.job_id));
      const byDefault = (await store.listJobs(1_000, "default")).map((j) => j.job_id);
      expect(byDefault).toContain(legacy.job_id);
      expect(byDefault.some((id) => mine.some((j) => j.job_id === id) || theirs.some((j) => j.job_id === id))).toBe(false);
      expect(await store.getJob(mine[0]!.job_id)).toMatchObject({ owner: alice });
    });

    it("finds a project's active jobs while they are pending or running, and not after", async () => {
      const project = newProject();
      const a = storedJob({ projectId: project, status: "pending" });
      const b = storedJob({ projectId: project, status: "pending" });
      const elsewhere = storedJob({ projectId: newProject(), status: "running" });
      await store.upsertJob(a);
      await store.upsertJob(b);
      await store.upsertJob(elsewhere);
      expect((await store.activeJobs(project)).map((j) => j.job_id).sort()).toEqual([a.job_id, b.job_id].sort());
      await store.upsertJob({ ...a, status: "running", fence: 1 });
      await store.upsertJob({ ...b, status: "completed", fence: 0 });
      expect((await store.activeJobs(project)).map((j) => [j.job_id, j.status])).toEqual([[a.job_id, "running"]]);
      // A refused write changes nothing, the index included.
      expect(await store.upsertJob({ ...b, status: "running", fence: 0 })).toBe("stale");
      expect((await store.activeJobs(project)).map((j) => j.job_id)).toEqual([a.job_id]);
      await store.upsertJob({ ...a, status: "failed", fence: 1 });
      expect(await store.activeJobs(project)).toEqual([]);
      // A newer run cannot re-activate it (rows never move back from terminal).
      expect(await store.upsertJob({ ...a, status: "running", fence: 2 })).toBe("stale");
      expect(await store.activeJobs(project)).toEqual([]);
      expect(await store.activeJobs(newProject())).toEqual([]);
    });

    it("stores NaN and ±Infinity as null", async () => {
      const job = {
        ...storedJob({ status: "completed" }),
        estimated_cost_usd: Number.NaN,
        result: { clusters: [{ cluster_id: 0, score: Number.POSITIVE_INFINITY }] },
        extra: { ratio: Number.NEGATIVE_INFINITY },
      };
      await store.upsertJob(job);
      const back = await store.getJob(job.job_id);
      expect(back?.estimated_cost_usd).toBeNull();
      expect(back?.result).toEqual({ clusters: [{ cluster_id: 0, score: null }] });
      expect(back?.extra).toEqual({ ratio: null });
    });

    it("deletes a job: row, listing entry and active-job look-up, leaving its neighbours", async () => {
      const project = newProject();
      const owner = `o${newProject()}`;
      const before = storedJob({ projectId: project, status: "completed", owner });
      const job = storedJob({ projectId: project, status: "running", fence: 2, owner });
      const after = storedJob({ projectId: project, status: "running", owner });
      for (const row of [before, job, after]) await store.upsertJob(row);

      await store.deleteJob(job.job_id);
      expect(await store.getJob(job.job_id)).toBeNull();
      expect((await store.listJobs(10, owner)).map((j) => j.job_id)).toEqual([after.job_id, before.job_id]);
      expect((await store.activeJobs(project, owner)).map((j) => j.job_id)).toEqual([after.job_id]);
      expect(await store.getJob(after.job_id)).toEqual(after);
      // A new row under the same id starts from nothing: a running row again, no fence of the deleted one in the way.
      expect(await store.upsertJob({ ...job, fence: 0 })).toBe("written");
      await store.deleteJob(job.job_id);
      await store.deleteJob(job.job_id); // an unknown job: nothing to do
      expect(await store.getJob(job.job_id)).toBeNull();
    });

    // Deleting a job must not cut the listing short: not the newest (the listing's start), not the
    // oldest, not one in the middle, at every page size, for every kind's store.
    it.each(["screening", "indexer"] as const)("lists and pages past deleted jobs, newest, oldest and middle (%s)", async (service) => {
      const kindStore = service === "screening" ? store : await subjectOf.open(service);
      try {
        const owner = `d${newProject()}`;
        const other = `x${newProject()}`;
        const project = newProject();
        const jobs = Array.from({ length: 7 }, () => storedJob({ service, owner, projectId: project, status: "running" }));
        for (const [i, job] of jobs.entries()) {
          await kindStore.upsertJob(job);
          await kindStore.upsertJob(storedJob({ service, owner: other, status: i % 2 ? "completed" : "pending" }));
        }
        let kept = [...jobs].reverse().map((j) => j.job_id); // newest first
        const check = async (what: string) => {
          for (const limit of [1, 2, 3, kept.length, 100]) {
            expect((await kindStore.listJobs(limit, owner)).map((j) => j.job_id), `${what}, limit ${limit}`).toEqual(kept.slice(0, limit));
          }
          expect((await kindStore.activeJobs(project, owner)).map((j) => j.job_id), `${what}, active jobs`).toEqual(kept);
          expect((await kindStore.listJobs(1_000)).map((j) => j.job_id).filter((id) => kept.includes(id)), `${what}, every owner`).toEqual(kept);
        };
        await check("before any delete");
        for (const [what, id] of [["the newest", kept[0]!], ["the oldest", kept.at(-1)!], ["a middle one", kept[2]!], ["the newest again", kept[0]!]] as const) {
          await kindStore.deleteJob(id);
          kept = kept.filter((k) => k !== id);
          await check(`after deleting ${what}`);
        }
        // Down to one and to none: the older of two deleted leaves the newer; then nothing is listed.
        while (kept.length > 2) {
          await kindStore.deleteJob(kept.at(-1)!);
          kept = kept.slice(0, -1);
        }
        await kindStore.deleteJob(kept[1]!);
        kept = kept.slice(0, 1);
        await check("after deleting the older of two");
        await kindStore.deleteJob(kept[0]!);
        kept = [];
        expect(await kindStore.listJobs(2, owner)).toEqual([]);
        expect(await kindStore.activeJobs(project, owner)).toEqual([]);
        expect((await kindStore.listJobs(100, other)).length).toBe(jobs.length);
      } finally {
        if (kindStore !== store) await kindStore.close();
      }
    });

    it("keeps everything across a reopen of the store", async () => {
      const project = newProject();
      const job = storedJob({ projectId: project, status: "running", fence: 1 });
      await store.upsertJob(job);
      const other = await subjectOf.open();
      try {
        expect(await other.getJob(job.job_id)).toEqual(job);
        expect((await other.activeJobs(project)).map((j) => j.job_id)).toEqual([job.job_id]);
        expect((await other.listJobs(1))[0]?.job_id).toBe(job.job_id);
        // Fencing holds across instances.
        expect(await other.upsertJob({ ...job, fence: 0 })).toBe("stale");
      } finally {
        await other.close();
      }
    });
  });
}
