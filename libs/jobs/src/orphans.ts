import { jobStateKeys, RETRYABLE, type LiveJobState } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import type { JobInfra } from "./infra";
import { isWrongRevision } from "./nats-errors";
import { durationMs, isActive } from "./state";
import { toStoredJob, type JobStore, type StoredJob } from "./store/job-store";

/** A job as a reaper found it (live state, else stored row). */
export type OrphanedJob = Pick<LiveJobState, "job_id" | "status" | "started_at" | "project_id" | "owner">;

/** What a reaper checks a job against, and how it says why the job failed. */
export interface OrphanRule {
  /** A job last seen (heartbeat, else creation) at least this long ago may be an orphan. */
  leaseMs: number;
  /** Which jobs this reaper may touch (e.g. one client's own): others are left alone. */
  accepts?: (view: Pick<LiveJobState, "owner" | "project_id">) => boolean;
  /** The `error` text of the job it fails. */
  explain: (view: OrphanedJob) => string;
}

/**
 * The one orphan rule, shared by the reaper of an admission (one project's jobs) and the periodic
 * sweep (every job): a job is orphaned when it is not terminal, it was last seen longer ago than
 * the lease and its command is no longer in the work queue (no worker will ever run it). It is
 * then marked failed (`orphan_cleanup`). Returns the job as it was when this call failed it, else null.
 *
 * Decided on fresh reads, never on the caller's earlier look-ups (a store timing out may have made
 * them old, and a job that finished meanwhile must never be overwritten as an orphan); the live
 * state is changed by compare-and-set on the revision just read, so a job a worker took or ended
 * in between is left alone.
 */
export async function reapIfOrphaned(infra: JobInfra, store: JobStore, id: string, rule: OrphanRule, logger: Logger): Promise<OrphanedJob | null> {
  const entry = await infra.registry.get(id);
  const row = entry ? null : store.persistent ? await store.getJob(id).catch(() => null) : null;
  const view = entry?.state ?? row;
  if (!view || !isActive(view) || (rule.accepts && !rule.accepts(view))) return null;
  const lastSeen = Date.parse(view.heartbeat_at ?? view.created_at);
  if (Number.isFinite(lastSeen) && Date.now() - lastSeen < rule.leaseMs) return null;
  if (await infra.queue.isQueued(id)) return null;

  const failedAt = new Date();
  const orphaned = {
    status: "failed" as const,
    error: rule.explain(view),
    error_category: "orphan_cleanup",
    error_retryable: RETRYABLE.orphan_cleanup,
    completed_at: failedAt.toISOString(),
    duration_ms: durationMs(view.started_at ?? view.created_at, failedAt),
  };
  if (entry) {
    const failed = { ...entry.state, ...orphaned, releasable: false };
    try {
      await infra.registry.kv.update(jobStateKeys.job(id), JSON.stringify(failed), entry.revision);
    } catch (error) {
      if (isWrongRevision(error)) return null;
      throw error;
    }
    // The live state is failed but not releasable until the store of record holds the failure:
    // a first poll must not drop the only terminal copy.
    const saved = await saveOrphan(store, toStoredJob(failed, null, entry.state.attempt), logger);
    if (saved) await infra.registry.update(id, (s) => (s.status === "failed" && !s.releasable ? { ...s, releasable: true } : null)).catch(() => undefined);
  } else if (row) {
    // No live state: no worker can be running the job, and the stored row is all there is.
    await saveOrphan(store, { ...row, ...orphaned }, logger);
  }
  logger.warn({ job_id: id, project_id: view.project_id, was: view.status }, "orphaned job marked failed");
  return view;
}

/** An orphan's failure into the store of record; false when the store did not take it (the live state keeps it then). */
async function saveOrphan(store: JobStore, record: StoredJob, logger: Logger): Promise<boolean> {
  if (!store.persistent) return true;
  try {
    return (await store.upsertJob(record)) === "written";
  } catch (error) {
    logger.warn({ err: error, job_id: record.job_id }, "could not save an orphaned job's failure");
    return false;
  }
}
