import type { LiveJobState, ObjectRef, ServiceError } from "@litrev/contracts";
import { applyProgress, closeStage, durationMs, isActive, type ProgressReport } from "../state";

/**
 * The worker's state transitions as pure functions: each takes the live state as it stands and
 * returns the next one, or null when the transition does not apply (the job is no longer active).
 * The worker applies them through compare-and-set writes fenced by its lease.
 */

export interface RunIdentity {
  /** The delivery number of this run: its fencing token. */
  deliveries: number;
  instance: string;
}

/** A run takes the job: `running`, with itself as the lease holder. */
export function takenState(state: LiveJobState, run: RunIdentity, now: Date): LiveJobState | null {
  if (!isActive(state)) return null;
  const at = now.toISOString();
  return { ...state, status: "running", started_at: state.started_at ?? at, heartbeat_at: at, attempt: run.deliveries, worker: run.instance };
}

/**
 * Whether this delivery of the job's command is older than the one whose run holds the job with a
 * live lease (heartbeat within `leaseMs`). JetStream numbers a command's deliveries upwards, so a
 * lower number is one a worker received before it was paused or cut off, while the command went
 * to another; taking the job from that later run would only make it stop and pay again for its
 * unit in flight. A holder whose heartbeat is older may be gone: then any delivery takes the job.
 */
export function isStaleDelivery(state: LiveJobState, run: RunIdentity, now: Date, leaseMs: number): boolean {
  if (state.status !== "running" || state.attempt <= run.deliveries || state.heartbeat_at === null) return false;
  return now.getTime() - Date.parse(state.heartbeat_at) < leaseMs;
}

/** Whether `state` is still held by this run. */
export const holds = (state: LiveJobState, run: RunIdentity) => state.attempt === run.deliveries && state.worker === run.instance;

function ended(state: LiveJobState, finished: Date): Pick<LiveJobState, "stage_timings" | "stage_started_at" | "completed_at" | "duration_ms" | "heartbeat_at"> {
  return {
    stage_timings: closeStage(state, finished),
    stage_started_at: null,
    completed_at: finished.toISOString(),
    duration_ms: durationMs(state.started_at ?? state.created_at, finished),
    heartbeat_at: finished.toISOString(),
  };
}

export interface Completion {
  /** Progress and live extras reported but not yet written, plus the outcome's extras. */
  report: ProgressReport;
  /** The result object, when the store of record could not take the results. */
  result: ObjectRef | null;
  releasable: boolean;
}

export function completedState(state: LiveJobState, completion: Completion, finished: Date): LiveJobState | null {
  if (!isActive(state)) return null;
  const withExtras = applyProgress(state, completion.report, finished);
  return {
    ...withExtras,
    ...ended(withExtras, finished),
    status: "completed",
    progress: 1,
    stage: "Complete",
    result: completion.result,
    releasable: completion.releasable,
  };
}

export function failedState(state: LiveJobState, failure: Pick<ServiceError, "message" | "category" | "retryable">, finished: Date, releasable: boolean): LiveJobState | null {
  if (!isActive(state)) return null;
  return {
    ...state,
    ...ended(state, finished),
    status: "failed",
    error: failure.message,
    error_category: failure.category,
    error_retryable: failure.retryable,
    releasable,
  };
}

/** The failure a job gets when its worker crashed on every one of its allowed deliveries. */
export function exhaustion(limit: number): Pick<ServiceError, "message" | "category" | "retryable"> {
  return {
    message: `The job was abandoned: its worker stopped or crashed on each of ${limit} delivery attempts (limit ${limit})`,
    category: "unknown",
    retryable: false,
  };
}
