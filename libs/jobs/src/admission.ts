import { jobDataObjects, RETRYABLE, type LiveJobState } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import type { JobInfra } from "./infra";
import type { LiveEntry } from "./registry";
import { durationMs, isActive } from "./state";
import { toStoredJob, type JobStore, type StoredJob } from "./store/job-store";
import { metrics } from "@litrev/telemetry";

export interface AdmitRequest {
  /** The `pending` state (see `newJobState`); its `project_id` is the exclusivity key. */
  state: LiveJobState;
  /** The job's input, stored as an object; never carried in the command itself. */
  input: unknown;
  /** Small parameters for the command. */
  params?: Record<string, unknown>;
  sealedProviderKey?: string | null | undefined;
  /** One pending or running job per truthy project id. */
  exclusiveProject?: boolean;
  /** A job is orphaned when not terminal, its command is no longer queued and it was last seen longer ago than this. */
  orphanLeaseMs?: number;
  logger: Logger;
}

export interface ProjectConflict {
  job_id: string;
  status: "pending" | "running";
}

export type AdmitResult = { ok: true; state: LiveJobState } | { ok: false; conflict: ProjectConflict };

/** How long a fresh lock whose job state is not written yet counts as a pending job. */
const LOCK_SETTLE_MS = 10_000;
const DEFAULT_ORPHAN_LEASE_MS = 60_000;

/**
 * Admits a job: reaps the project's orphans, takes the project's slot atomically, then writes the
 * live state, saves it, stores the input and queues the command (in that order, so that a poll
 * right after the answer finds the job on any gateway). A failure after the slot was taken
 * releases it again.
 */
export async function admitJob(infra: JobInfra, store: JobStore, request: AdmitRequest): Promise<AdmitResult> {
  const { state, logger } = request;
  const jobId = state.job_id;
  const projectId = state.project_id;
  const exclusive = request.exclusiveProject === true && !!projectId;

  if (exclusive) {
    await reapOrphans(infra, store, projectId, request.orphanLeaseMs ?? DEFAULT_ORPHAN_LEASE_MS, logger);
    const conflict = await takeProjectSlot(infra, projectId, jobId);
    if (conflict) return { ok: false, conflict };
  }

  let created = false;
  try {
    const input = await infra.data.putJson(jobDataObjects.input(jobId), request.input);
    await infra.registry.create(state);
    created = true;
    metrics.jobsByStatus(infra.service, "pending", 1);
    await store.upsertJob(toStoredJob(state)).catch((error: unknown) =>
      logger.warn({ err: error, job_id: jobId }, "could not save the new job; it runs and is saved again later"),
    );
    await infra.queue.submit({
      version: 1,
      type: "job.run",
      service: infra.service,
      job_id: jobId,
      submitted_at: new Date().toISOString(),
      input,
      sealed_provider_key: request.sealedProviderKey ?? null,
      params: request.params ?? {},
    });
    return { ok: true, state };
  } catch (error) {
    if (created) await infra.registry.remove(jobId).catch(() => undefined);
    await infra.data.delete(jobDataObjects.input(jobId));
    if (exclusive) await infra.registry.releaseLock(projectId, jobId).catch(() => undefined);
    throw error;
  }
}

async function takeProjectSlot(infra: JobInfra, projectId: number, jobId: string): Promise<ProjectConflict | null> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const taken = await infra.registry.acquireLock(projectId, jobId);
    if (taken.ok) return null;
    if (!taken.lock.job_id) continue; // released under us: try again
    const holder = await infra.registry.get(taken.lock.job_id);
    if (holder && isActive(holder.state)) return { job_id: holder.state.job_id, status: holder.state.status as ProjectConflict["status"] };
    if (!holder && Date.now() - Date.parse(taken.lock.created_at) < LOCK_SETTLE_MS) {
      // Its admission is still writing the state.
      return { job_id: taken.lock.job_id, status: "pending" };
    }
    // The holder finished (or vanished) without releasing: clear the stale slot, if nobody else did.
    await infra.registry.removeLockIfUnchanged(projectId, taken.revision);
  }
  throw new Error(`could not take the job slot of project ${projectId}: too much contention`);
}

/**
 * Marks the project's orphaned jobs failed (spec: before the one-active-job check). Candidates are
 * the job holding the project's slot and, with persistence, the stored pending/running jobs. A job
 * is orphaned when it is not terminal, its command is no longer in the work queue (so no worker
 * will ever run it) and it was last seen (heartbeat, else creation) longer ago than `leaseMs`.
 * Returns the ids it reaped.
 */
export async function reapOrphans(infra: JobInfra, store: JobStore, projectId: number, leaseMs: number, logger: Logger): Promise<string[]> {
  const live = new Map<string, LiveEntry>();
  const stored = new Map<string, StoredJob>();
  const holder = await infra.registry.lockHolder(projectId);
  if (holder?.lock.job_id) {
    const entry = await infra.registry.get(holder.lock.job_id);
    if (entry) live.set(entry.state.job_id, entry);
  }
  if (store.persistent) {
    try {
      for (const job of await store.activeJobs(projectId)) stored.set(job.job_id, job);
    } catch (error) {
      logger.warn({ err: error, project_id: projectId }, "could not read stored jobs for orphan cleanup");
    }
  }
  for (const id of stored.keys()) {
    if (!live.has(id)) {
      const entry = await infra.registry.get(id);
      if (entry) live.set(id, entry);
    }
  }

  const reaped: string[] = [];
  const now = Date.now();
  for (const id of new Set([...live.keys(), ...stored.keys()])) {
    const entry = live.get(id);
    const view = entry?.state ?? stored.get(id);
    if (!view) continue;
    if (!isActive(view)) {
      // Finished, but its final save was lost: bring the stored row up to date instead.
      if (stored.has(id)) await store.upsertJob(toStoredJob(view as LiveJobState)).catch(() => undefined);
      continue;
    }
    const lastSeen = Date.parse(view.heartbeat_at ?? view.created_at);
    if (Number.isFinite(lastSeen) && now - lastSeen < leaseMs) continue;
    if (await infra.queue.isQueued(id)) continue;

    const failedAt = new Date();
    const orphan = (s: Pick<LiveJobState, "started_at" | "created_at">) => ({
      status: "failed" as const,
      error: `Job ${id} was orphaned: its worker is gone and its command is no longer queued, so it was marked failed before a new job for project ${projectId} was accepted`,
      error_category: "orphan_cleanup",
      error_retryable: RETRYABLE.orphan_cleanup,
      completed_at: failedAt.toISOString(),
      duration_ms: durationMs(s.started_at ?? s.created_at, failedAt),
    });
    const updated = entry ? await infra.registry.update(id, (s) => (isActive(s) ? { ...s, ...orphan(s) } : null)) : null;
    const record = updated ? toStoredJob(updated.state) : stored.get(id) ? { ...stored.get(id)!, ...orphan(stored.get(id)!) } : null;
    if (record && store.persistent) {
      await store.upsertJob(record).catch((error: unknown) => logger.warn({ err: error, job_id: id }, "could not save an orphaned job's failure"));
    }
    await infra.registry.releaseLock(projectId, id).catch(() => undefined);
    logger.warn({ job_id: id, project_id: projectId }, "orphaned job marked failed");
    reaped.push(id);
  }
  return reaped;
}
