import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_JOB_OWNER, isJobId, JobRunCommand, jobStateKeys, ServiceError, subjects, type LiveJobState, jobNotFound } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import { ArtifactWriter, readArtifactHead } from "./artifact";
import type { OwnerStorage } from "./owner-storage";
import type { PromptInstructions } from "./finished/report";
import { eraseJobData, eraseKeysNaming, eraseObjectsNaming } from "./erase";
import type { JobInfra } from "./infra";
import { isNotFound, isWrongRevision } from "./nats-errors";
import { safeJson } from "./safe-json";
import { cancelRequested, isActive, ownedBy } from "./state";
import { toStoredJob, type JobStore } from "./store/job-store";
import { cancelledFailure } from "./worker/errors";
import { failedState } from "./worker/transitions";

/** How long a cancel waits for the running job's worker to end it before answering 504. */
export const CANCEL_WAIT_MS = 10_000;

export interface JobCancelDeps {
  infra: JobInfra;
  store: JobStore;
  logger: Logger;
  prompts?: PromptInstructions | undefined;
  /** Per-owner storage: a deleted job's reservation is given back. */
  storage?: OwnerStorage | undefined;
  waitMs?: number;
}

const alreadyEnded = (jobId: string, status: string) => new ServiceError("conflict", `Job ${jobId} is already ${status}`, { simple: true });

/** Whose job it is and whether it has ended, from its live state, else its artifact, else its stored row. */
async function findJob(deps: JobCancelDeps, jobId: string): Promise<{ owner: string | undefined; status: string; live: boolean } | null> {
  const entry = await deps.infra.registry.get(jobId);
  if (entry) return { owner: entry.state.owner, status: entry.state.status, live: true };
  const head = await readArtifactHead(deps.infra.data, jobId);
  if (head) return { owner: head.owner, status: head.status, live: false };
  const row = deps.store.persistent ? await deps.store.getJob(jobId) : null;
  return row ? { owner: row.owner, status: row.status, live: false } : null;
}

/**
 * Cancels a pending or running job for `owner` (a poll's ownership rules: another client's job is
 * not found) and answers once its live state is terminal: `failed`, `error_category` `cancelled`.
 *
 * The cancel is first marked in the live state (`extra.cancel_requested_at`, compare-and-set), so a
 * worker that takes the job from then on stops it at once. Then:
 * - **Pending** (its command queued, no worker yet): ended here. Its (empty) artifact and stored
 *   row first, then the live state by compare-and-set on the revision just read, then the command
 *   leaves the queue and the project lock and input go. Should a worker take the job in between,
 *   the compare-and-set fails and the job is cancelled as a running one.
 * - **Running**: the cancel is published on the service's cancel subject, which every worker replica
 *   hears; the one holding the job aborts its calls in flight and ends the job with what finished
 *   (its artifact, row and live state in the usual order), releasing the project. 504 when the job
 *   is not terminal within `waitMs` (its worker unreachable): the mark stays, and the run that
 *   holds the job next ends it as cancelled.
 */
export async function cancelJob(deps: JobCancelDeps, jobId: string, owner: string | undefined): Promise<LiveJobState> {
  if (!isJobId(jobId)) throw jobNotFound();
  const { infra } = deps;
  for (let attempt = 0; attempt < 20; attempt++) {
    const entry = await infra.registry.get(jobId);
    if (!entry) {
      const found = await findJob(deps, jobId);
      if (!found || !ownedBy(found, owner)) throw jobNotFound();
      throw alreadyEnded(jobId, found.status);
    }
    if (!ownedBy(entry.state, owner)) throw jobNotFound();
    if (!isActive(entry.state)) throw alreadyEnded(jobId, entry.state.status);
    // The mark first: a worker that takes the job from here on stops it at once.
    if (!cancelRequested(entry.state)) {
      const mark = { ...entry.state, extra: { ...entry.state.extra, cancel_requested_at: new Date().toISOString() } };
      await compareAndSet(infra, mark, entry.revision);
      continue; // read it again, marked (or changed by someone else: decide again)
    }
    if (entry.state.status === "pending") {
      const ended = await endPending(deps, entry.state, entry.revision);
      if (ended) return ended;
      continue; // a worker took it meanwhile: it stops at the mark; wait for it as for a running job
    }
    infra.nc.publish(subjects.jobCancel(infra.service), JSON.stringify({ job_id: jobId }));
    return waitTerminal(deps, jobId);
  }
  throw new ServiceError("service_unavailable", `Could not cancel job ${jobId}: its state kept changing; retry`);
}

/** Ends a job no worker has taken; null when one took it (or anything else changed it) first. */
async function endPending(deps: JobCancelDeps, state: LiveJobState, revision: number): Promise<LiveJobState | null> {
  const { infra, store } = deps;
  const final = failedState(state, cancelledFailure(), new Date(), true);
  if (!final) return null;
  const record = toStoredJob(final, {}, state.attempt);
  // The artifact, then the row, before the state turns terminal: whoever sees it terminal finds them, and an ended row its artifact.
  await new ArtifactWriter(infra.data, infra.service, state.job_id, state.attempt).finish(record, deps.prompts);
  if (store.persistent) await store.upsertJob(record);
  if (!(await compareAndSet(infra, final, revision))) return null;
  const command = await queuedCommand(infra, state.job_id);
  await infra.queue.discard(state.job_id);
  if (state.project_id !== null) await infra.registry.releaseLock(state.project_id, state.job_id, state.owner);
  if (command?.input) await infra.data.deleteLines(command.input);
  deps.logger.info({ job_id: state.job_id }, "pending job cancelled by its client");
  return final;
}

/** Writes the job's live state if it is still at `revision`; false when anything changed it first. */
async function compareAndSet(infra: JobInfra, state: LiveJobState, revision: number): Promise<boolean> {
  try {
    await infra.registry.kv.update(jobStateKeys.job(state.job_id), JSON.stringify(state), revision);
    return true;
  } catch (error) {
    if (isWrongRevision(error)) return false;
    throw error;
  }
}

/** The job's command while it is queued (it names the job's input), else null. */
async function queuedCommand(infra: JobInfra, jobId: string): Promise<JobRunCommand | null> {
  try {
    const msg = await infra.jsm.streams.getMessage(infra.names.commandStream, { last_by_subj: infra.names.commandSubject(jobId) });
    const parsed = JobRunCommand.safeParse(msg ? safeJson(msg) : undefined);
    return parsed.success ? parsed.data : null;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** The job's live state once it is terminal (its worker ended it), polled from the stream leader. */
async function waitTerminal(deps: JobCancelDeps, jobId: string): Promise<LiveJobState> {
  const deadline = Date.now() + (deps.waitMs ?? CANCEL_WAIT_MS);
  for (;;) {
    const entry = await deps.infra.registry.get(jobId);
    if (!entry) throw jobNotFound(); // deleted meanwhile
    // Ended by its worker just before the cancel reached it: it was not cancelled after all.
    if (!isActive(entry.state)) {
      if (entry.state.error_category !== "cancelled") throw alreadyEnded(jobId, entry.state.status);
      return entry.state;
    }
    if (Date.now() >= deadline) {
      throw new ServiceError("timeout", `Job ${jobId} is marked cancelled, but its worker did not stop it within ${Math.round((deps.waitMs ?? CANCEL_WAIT_MS) / 1000)} s; it ends cancelled when its worker next runs`);
    }
    await sleep(50);
  }
}

/**
 * Deletes a job for `owner` (a poll's ownership rules): a pending or running job is cancelled
 * first (`cancelJob`), then every trace of it is erased — its live state, command, checkpoints,
 * input, partial chunks and artifact (every object under its name), its stored row and
 * listing entry (`JobStore.deleteJob`), its validation samples and certificate — each key and
 * object with its subject purged, so no delete marker names it either. Its storage reservation is
 * given back, and every gateway is told to drop what it cached of the job.
 */
export async function deleteJob(deps: JobCancelDeps, jobId: string, owner: string | undefined): Promise<void> {
  if (!isJobId(jobId)) throw jobNotFound();
  const { infra, store } = deps;
  const found = await findJob(deps, jobId);
  if (!found || !ownedBy(found, owner)) throw jobNotFound();
  if (found.live && (found.status === "pending" || found.status === "running")) {
    await cancelJob(deps, jobId, owner).catch((error: unknown) => {
      // Ended by its worker meanwhile: nothing left to cancel.
      if (!(error instanceof ServiceError && error.category === "conflict")) throw error;
    });
  }
  // Its worker cleans up (lock, input, partial chunks) after the terminal state and acks last: erasing
  // before that could race its deletes, which would leave delete markers behind.
  await settled(infra, jobId, CANCEL_WAIT_MS);
  // Its worker frees the project as it ends the job; should it have died first, the lock goes here.
  const ended = await infra.registry.get(jobId);
  if (ended?.state.project_id != null) await infra.registry.releaseLock(ended.state.project_id, jobId, ended.state.owner);
  await eraseJobTraces(infra, jobId);
  if (store.persistent) await store.deleteJob(jobId);
  await deps.storage?.cancel(found.owner ?? DEFAULT_JOB_OWNER, jobId).catch((error: unknown) => deps.logger.warn({ err: error, job_id: jobId }, "could not give back the deleted job's storage reservation"));
  // The owner too: a gateway forgets what it remembered of that owner's storage (services/gateway storage-refusals.ts).
  infra.nc.publish(subjects.jobErased(infra.service), JSON.stringify({ job_id: jobId, owner: found.owner ?? DEFAULT_JOB_OWNER }));
  deps.logger.info({ job_id: jobId }, "job deleted by its client");
}

/** Waits (at most `ms`) until the job's command has left the work queue: its worker acked it after cleaning up. */
async function settled(infra: JobInfra, jobId: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && (await infra.queue.isQueued(jobId))) await sleep(50);
}

/**
 * Erases a job from the job service's NATS resources: its command, its checkpoints, its data
 * (`eraseJobData`: input, partial chunks, artifact), then whatever object or delete marker still
 * names it in the data store, and every key of the state and validation buckets naming it (live
 * state, validation samples, certificate), each with its history.
 */
async function eraseJobTraces(infra: JobInfra, jobId: string): Promise<void> {
  const command = await queuedCommand(infra, jobId);
  await infra.queue.discard(jobId);
  await infra.checkpoints.purge(jobId);
  await eraseJobData(infra.data, jobId, command?.input);
  await eraseObjectsNaming(infra.jsm, infra.data.store, infra.names.dataBucket, jobId);
  await eraseKeysNaming(infra.jsm, infra.names.validationBucket, jobId);
  await eraseKeysNaming(infra.jsm, infra.names.stateBucket, jobId);
}
