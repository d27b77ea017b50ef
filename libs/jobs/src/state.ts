import { DEFAULT_JOB_OWNER, type JobService, type LiveJobState } from "@litrev/contracts";
import { finiteOrNull } from "./finite";

export interface NewJobState {
  jobId: string;
  service: JobService;
  projectId?: number | null | undefined;
  /** The creating client's owner id (default: `DEFAULT_JOB_OWNER`). */
  owner?: string | undefined;
  modelVersion: string;
  config: Record<string, unknown>;
  estimatedCostUsd: number | null;
  extra?: Record<string, unknown>;
  now?: Date;
}

/** The `pending` state a job gets at admission: progress 0, stage empty. */
export function newJobState(init: NewJobState): LiveJobState {
  return {
    version: 1,
    type: "job.state",
    job_id: init.jobId,
    service: init.service,
    status: "pending",
    progress: 0,
    stage: "",
    stage_timings: {},
    stage_started_at: null,
    project_id: init.projectId ?? null,
    owner: init.owner ?? DEFAULT_JOB_OWNER,
    model_version: init.modelVersion,
    config: finiteOrNull(init.config),
    estimated_cost_usd: finiteOrNull(init.estimatedCostUsd),
    created_at: (init.now ?? new Date()).toISOString(),
    started_at: null,
    heartbeat_at: null,
    completed_at: null,
    duration_ms: null,
    error: null,
    error_category: null,
    error_retryable: null,
    attempt: 0,
    handoffs: 0,
    worker: null,
    result: null,
    releasable: false,
    extra: init.extra ?? {},
  };
}

export interface ProgressReport {
  stage?: string | undefined;
  progress?: number | undefined;
  extra?: Record<string, unknown> | undefined;
}

/**
 * Applies a progress report: progress only ever grows (a redelivered job re-reporting an earlier
 * figure, or a late write from a slow replica, cannot move it back), and a stage change records the
 * previous stage's duration in `stage_timings`.
 */
export function applyProgress(state: LiveJobState, report: ProgressReport, now = new Date()): LiveJobState {
  const next: LiveJobState = { ...state, heartbeat_at: now.toISOString() };
  if (report.progress !== undefined && Number.isFinite(report.progress)) {
    next.progress = Math.max(state.progress, Math.min(1, Math.max(0, report.progress)));
  }
  if (report.stage !== undefined && report.stage !== state.stage) {
    next.stage_timings = closeStage(state, now);
    next.stage = report.stage;
    next.stage_started_at = now.toISOString();
  }
  if (report.extra) next.extra = { ...state.extra, ...finiteOrNull(report.extra) };
  return next;
}

/** Stage timings with the current stage's duration recorded (used on a stage change and at the end). */
export function closeStage(state: LiveJobState, now = new Date()): Record<string, number | null> {
  if (!state.stage || !state.stage_started_at) return state.stage_timings;
  const elapsed = now.getTime() - Date.parse(state.stage_started_at);
  return { ...state.stage_timings, [state.stage]: Number.isFinite(elapsed) ? Math.max(0, elapsed) : null };
}

/**
 * Whether a job belongs to `owner`. A job without an owner is the default owner's (it predates
 * owners); no owner asked for (a caller on NATS that is not the gateway) means no check.
 */
export const ownedBy = (record: { owner?: string | undefined }, owner: string | undefined): boolean =>
  owner === undefined || (record.owner ?? DEFAULT_JOB_OWNER) === owner;

export const isActive = (state: Pick<LiveJobState, "status">) => state.status === "pending" || state.status === "running";

/** Whether the job's client asked for it to be cancelled (the mark the owning service sets in its live state). */
export const cancelRequested = (state: Pick<LiveJobState, "extra">): boolean => typeof state.extra.cancel_requested_at === "string";

/** Whole milliseconds between two ISO timestamps (null when either is missing). */
export function durationMs(from: string | null, to: Date): number | null {
  if (!from) return null;
  const ms = to.getTime() - Date.parse(from);
  return Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : null;
}
