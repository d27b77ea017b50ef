import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_JOB_OWNER, jobKind, jobDataObjects, ServiceError, type LiveJobState, type ObjectRef } from "@litrev/contracts";
import { metrics, type Logger } from "@litrev/telemetry";
import type { JobInfra } from "../infra";
import { putListInput, type ListHead } from "../list-input";
import { reapIfOrphaned, type OrphanRule } from "../orphans";
import type { LiveEntry } from "../registry";
import { durationMs, isActive, ownedBy } from "../state";
import { toStoredJob, type JobStore, type StoredJob } from "../store/job-store";
import { asUnavailable } from "../nats-errors";
import type { OwnerStorage } from "../owner-storage";

export interface AdmitRequest {
  /** The `pending` state (see `newJobState`); its `project_id` is the exclusivity key where the job kind has one. */
  state: LiveJobState;
  /** The job's input, stored as an object; never carried in the command itself. */
  input: unknown;
  /**
   * The input's bulk list (e.g. `papers`): stored as a chunked list (`JobData.putLines`) that the
   * worker reads chunk by chunk. Without it the input is stored as one JSON object.
   */
  list?: string;
  /**
   * The list as the gateway already stored it (a chunked list under `staged/…`): it becomes the
   * job's input as is, with `input` (the other fields) as its head, and is never read here.
   */
  staged?: ObjectRef | null;
  /** Small parameters for the command. */
  params?: Record<string, unknown>;
  sealedProviderKey?: string | null | undefined;
  /**
   * The admission's own rule after the 409 check and before the job is accepted (screening: the
   * cost ceiling). Throwing refuses the job; the project is released again.
   */
  check?: () => void;
  /**
   * The owner's storage quota, and an upper estimate of the job's results in bytes: the job's input
   * and results are reserved after the admission's own check and before anything is stored.
   */
  storage?: { quota: OwnerStorage; resultBytes: number } | undefined;
  /** A job is orphaned when not terminal, its command is no longer queued and it was last seen longer ago than this. */
  orphanLeaseMs?: number;
  logger: Logger;
}

export interface ProjectConflict {
  job_id: string;
  status: "pending" | "running";
  /** The holder's owner (absent on jobs from before owners): a 409 names the job only to its own client. */
  owner?: string | undefined;
}

export type AdmitResult = { ok: true; state: LiveJobState } | { ok: false; conflict: ProjectConflict };

/** How long a project lock whose job state is not written yet counts as an admission in progress. */
const LOCK_SETTLE_MS = 3_000;
const DEFAULT_ORPHAN_LEASE_MS = 60_000;
/** How long a conflicting admission waits for a fresh lock's job state to appear. */
const HOLDER_WAIT_MS = 1_000;
/** An admission refreshes its pending job's heartbeat this often (at most) until its command is queued. */
const ADMISSION_HEARTBEAT_MS = 5_000;

/**
 * Admits a job in one pass, in the spec's order: the project's orphans are reaped, the project's
 * slot is taken (409 when an active job holds it), the admission's own check runs (the cost
 * ceiling), and the job is accepted — for job kinds with one active job per project
 * (`JOB_KINDS`), atomically across any number of gateway and service replicas.
 *
 * Accepting writes the `pending` live state first (so the slot's holder is visibly active, and a
 * poll right after the answer finds the job on any gateway), then uploads the input, checks that
 * it still holds the slot, saves the row and queues the command, keeping the pending state's
 * heartbeat fresh all along (however slow the admission, its job is neither a stale lock nor an
 * orphan). Anything failing after the slot was taken releases it again. An admission that dies
 * before queueing the command leaves a pending job that stops beating: the orphan sweep of the
 * owning service fails it (`OrphanSweep`).
 */
export async function admitJob(infra: JobInfra, store: JobStore, request: AdmitRequest): Promise<AdmitResult> {
  // A NATS failure is the client's "retry shortly" (503/504), never a 500 with nothing to go on.
  return admit(infra, store, request).catch((error: unknown) => Promise.reject(asUnavailable(error, "The job store")));
}

async function admit(infra: JobInfra, store: JobStore, request: AdmitRequest): Promise<AdmitResult> {
  const { state, logger } = request;
  const jobId = state.job_id;
  const projectId = state.project_id;
  // The slot is (owner, project): a project id is the client's own key, so another client's job
  // for the same id neither blocks this one nor shows in its 409 (issue 23, T1).
  const owner = state.owner;
  const exclusive = jobKind(infra.service).exclusiveProject && !!projectId;

  if (exclusive) {
    await reapOrphans(infra, store, projectId, request.orphanLeaseMs ?? DEFAULT_ORPHAN_LEASE_MS, logger, owner);
    const conflict = await takeProjectSlot(infra, projectId, jobId, owner);
    if (conflict) {
      if (request.staged) await dropInput(infra, jobId, request.staged);
      return { ok: false, conflict };
    }
  }

  let created = false;
  let reserved = false;
  // A job that was never queued holds nothing (a give-back lost here leaves its results counted as kept until they would have expired).
  const unreserve = async () => {
    if (reserved) await request.storage!.quota.cancel(owner ?? DEFAULT_JOB_OWNER, jobId).catch(() => undefined);
    reserved = false;
  };
  let saved = false;
  let input: ObjectRef | null = null;
  let heartbeat: NodeJS.Timeout | undefined;
  try {
    request.check?.();
    if (request.storage) {
      // The results stay counted until they expire, with the titles and abstracts the artifact keeps beside them (two lists of JSON strings: at most the input's size).
      const input = inputBytes(request);
      await request.storage.quota.reserve(owner ?? DEFAULT_JOB_OWNER, jobId, { input, results: request.storage.resultBytes + input });
      reserved = true;
    }
    await infra.registry.create(state);
    created = true;
    // From the pending state to the queued command the admission itself is the job's only sign
    // of life: an admission that stops beating (killed, cut off) leaves an orphan for the sweep
    // (libs/jobs orphan-sweep.ts); one still at work, however slow, is never taken for one.
    heartbeat = admissionHeartbeat(infra, jobId, request.orphanLeaseMs ?? DEFAULT_ORPHAN_LEASE_MS);
    input = await storeInput(infra, jobId, request);
    if (exclusive) {
      // Confirmed by compare-and-set, not only read: an admission that judged our lock stale
      // (older than LOCK_SETTLE_MS with no state yet) removes it only at the revision it saw, so
      // either its removal or this confirmation fails, never both succeed (two active jobs).
      const holder = await infra.registry.lockHolder(projectId, owner);
      const held = holder?.lock.job_id === jobId && (await infra.registry.confirmLock(projectId, owner, holder));
      if (!held) {
        // Taken from us meanwhile (our state was reaped, or the lock cleared): the other job stands.
        const other = holder ? await infra.registry.get(holder.lock.job_id) : null;
        await infra.registry.remove(jobId).catch(() => undefined);
        created = false;
        await dropInput(infra, jobId, input ?? request.staged);
        await unreserve();
        if (other && isActive(other.state)) return { ok: false, conflict: conflictOf(other) };
        throw new ServiceError("service_unavailable", `The job slot of project ${projectId} changed hands during admission; retry`);
      }
    }
    metrics.jobsByStatus(infra.service, "pending", 1);
    saved = true; // from here a row may exist, even when the write below reports a failure
    await store.upsertJob(toStoredJob(state, null, 0)).catch((error: unknown) =>
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
    // The client hears of a failure and never of this job: its saved row must not stay `pending`
    // (a ghost in listings until retention). Stores keep rows, so it is left failed (same fence:
    // the rule lets pending turn terminal); a RetryingJobStore retries this write through an outage.
    if (saved) {
      metrics.jobsByStatus(infra.service, "pending", -1);
      await store.upsertJob(notQueuedRow(state, error)).catch((saveError: unknown) =>
        logger.warn({ err: saveError, job_id: jobId }, "could not mark the job that was never queued as failed"),
      );
    }
    if (created) await infra.registry.remove(jobId).catch(() => undefined);
    await dropInput(infra, jobId, input ?? request.staged);
    if (exclusive) await infra.registry.releaseLock(projectId, jobId, owner).catch(() => undefined);
    await unreserve();
    throw error;
  } finally {
    clearInterval(heartbeat);
  }
}

/** The row of an admission that failed after saving it: failed, since no command will ever run it. */
function notQueuedRow(state: LiveJobState, error: unknown): StoredJob {
  const failure = ServiceError.from(error);
  const at = new Date();
  return {
    ...toStoredJob(state, null, 0),
    status: "failed",
    error: `The job was not queued (${failure.message}); it never ran`,
    error_category: failure.category,
    error_retryable: failure.retryable,
    completed_at: at.toISOString(),
    duration_ms: durationMs(state.created_at, at),
  };
}

/**
 * The bytes the job's input takes once stored: a staged list as the gateway measured it, plus its
 * head (criteria, questions, field definitions: up to megabytes of their own), or the whole input.
 */
export function inputBytes(request: Pick<AdmitRequest, "staged" | "input">): number {
  return (request.staged?.bytes ?? 0) + Buffer.byteLength(JSON.stringify(request.input));
}

/** Stores the job's input: whole, as a chunked list, or — staged by the gateway — only its head beside the list. */
async function storeInput(infra: JobInfra, jobId: string, request: AdmitRequest): Promise<ObjectRef> {
  if (request.staged) {
    const { list = "items" } = request;
    await infra.data.putHead(request.staged, { list, head: request.input as Record<string, unknown> } satisfies ListHead);
    // Sealed as admitted: the gateway may write the staging store, so a later replacement of the
    // head or a chunk must make the worker's read fail rather than run another input.
    return infra.data.seal(request.staged);
  }
  if (request.list) return putListInput(infra.data, jobDataObjects.input(jobId), request.input as Record<string, unknown>, request.list);
  return infra.data.putJson(jobDataObjects.input(jobId), request.input);
}

/** Removes a refused job's input (or the gateway's staged list: nobody else will). */
async function dropInput(infra: JobInfra, jobId: string, ref: ObjectRef | null | undefined): Promise<void> {
  if (ref) await infra.data.deleteLines(ref).catch(() => undefined);
  else await infra.data.delete(jobDataObjects.input(jobId));
}

/**
 * Refreshes the pending job's heartbeat (a third of the orphan lease, at most every 5 s) so that
 * neither another admission nor the sweep takes a job whose admission is still at work for an orphan.
 */
function admissionHeartbeat(infra: JobInfra, jobId: string, leaseMs: number): NodeJS.Timeout {
  const beat = () =>
    void infra.registry.update(jobId, (s) => (s.status === "pending" ? { ...s, heartbeat_at: new Date().toISOString() } : null)).catch(() => undefined);
  return setInterval(beat, Math.max(250, Math.min(ADMISSION_HEARTBEAT_MS, Math.floor(leaseMs / 3))));
}

const conflictOf = (entry: LiveEntry): ProjectConflict => ({
  job_id: entry.state.job_id,
  status: entry.state.status as ProjectConflict["status"],
  owner: entry.state.owner,
});

async function takeProjectSlot(infra: JobInfra, projectId: number, jobId: string, owner: string | undefined): Promise<ProjectConflict | null> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const taken = await infra.registry.acquireLock(projectId, jobId, owner);
    if (taken.ok) return null;
    if (!taken.lock.job_id) continue; // released under us: try again
    const holder = await holderState(infra, taken.lock.job_id, Date.parse(taken.lock.created_at));
    if (holder && isActive(holder.state)) return conflictOf(holder);
    if (!holder && Date.now() - Date.parse(taken.lock.created_at) < LOCK_SETTLE_MS) {
      // Its admission is (still) between taking the lock and writing the pending state.
      return { job_id: taken.lock.job_id, status: "pending", owner: taken.lock.owner };
    }
    // The holder finished (or vanished) without releasing: clear the stale slot, if nobody else did.
    await infra.registry.removeLockIfUnchanged(projectId, owner, taken.revision);
  }
  throw new ServiceError("service_unavailable", `Could not take the job slot of project ${projectId}: too much contention; retry`);
}

/**
 * The lock holder's live state. A lock taken a moment ago may not have its state yet (its
 * admission writes it right after the lock): wait a little for it, so that a 409 names a job that
 * polls and active-job can already see.
 */
async function holderState(infra: JobInfra, jobId: string, lockedAt: number): Promise<LiveEntry | null> {
  for (;;) {
    const entry = await infra.registry.get(jobId);
    if (entry || !Number.isFinite(lockedAt) || Date.now() - lockedAt > HOLDER_WAIT_MS) return entry;
    await sleep(20);
  }
}

/**
 * Marks the project's orphaned jobs failed (spec: before the one-active-job check). Candidates are
 * the job holding the owner's slot of the project and the owner's stored pending/running jobs of
 * it (one client's creation never reaps another client's jobs). A job is orphaned when
 * it is not terminal, its command is no longer in the work queue (so no worker will ever run it)
 * and it was last seen (heartbeat, else creation) longer ago than `leaseMs` (`reapIfOrphaned`, the
 * rule the periodic sweep applies to every job). Returns the ids it reaped.
 */
export async function reapOrphans(
  infra: JobInfra,
  store: JobStore,
  projectId: number,
  leaseMs: number,
  logger: Logger,
  owner: string | undefined,
): Promise<string[]> {
  const candidates = new Set<string>();
  const holder = await infra.registry.lockHolder(projectId, owner);
  if (holder?.lock.job_id) candidates.add(holder.lock.job_id);
  if (store.persistent) {
    try {
      for (const job of await store.activeJobs(projectId, owner)) candidates.add(job.job_id);
    } catch (error) {
      logger.warn({ err: error, project_id: projectId }, "could not read stored jobs for orphan cleanup");
    }
  }

  const reaped: string[] = [];
  const rule: OrphanRule = {
    leaseMs,
    accepts: (view) => ownedBy(view, owner),
    explain: ({ job_id }) =>
      `Job ${job_id} was orphaned: its worker is gone and its command is no longer queued, so it was marked failed before a new job for project ${projectId} was accepted`,
  };
  for (const id of candidates) {
    if (!(await reapIfOrphaned(infra, store, id, rule, logger))) continue;
    await infra.registry.releaseLock(projectId, id, owner).catch(() => undefined);
    reaped.push(id);
  }
  return reaped;
}
