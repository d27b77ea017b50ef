import { z } from "zod";
import { jobErrorShape, specErrorFields } from "./errors";
import { JobStatus, JsonObject, Timestamp } from "./common";
import type { LiveJobState } from "./jobs";
import { jobReportFields } from "./provenance";

/**
 * A job's live progress as server-sent events (`GET /v1/{screening|indexer}/jobs/{job_id}/events`,
 * docs/console.md). A `state` event carries the job's state as it changes, its `id` the revision
 * of that state (numbers that only grow, the same on every gateway replica); the stream ends with
 * one `end` event whose data is exactly what a poll of the finished job answers, and whose id is
 * `end`. An `error` event ends a stream that could not read the finished job (data: the poll's
 * error body).
 */
export const JOB_EVENT = { state: "state", end: "end", error: "error" } as const;
export const TERMINAL_EVENT_ID = "end";

const nullableNumber = z.number().nullable();

/** The data of a `state` event: what changes while a job runs (never its results). */
export const JobStateEvent = z.object({
  job_id: z.string(),
  status: JobStatus,
  stage: z.string(),
  progress: z.number(),
  stage_timings: z.record(z.string(), nullableNumber),
  /** Tokens and cost so far, as the job reports them (null before the first report). */
  usage: JsonObject.nullable(),
  estimated_cost_usd: nullableNumber,
  /** The cost of the tokens the provider reported so far (null: mock job, unpriced model, or not reported yet). */
  actual_cost_usd: nullableNumber,
  model_version: z.string(),
  /** Items finished and in all (extraction jobs report these). */
  items_done: z.number().int().nullable(),
  items_total: z.number().int().nullable(),
  created_at: Timestamp,
  started_at: Timestamp.nullable(),
  completed_at: Timestamp.nullable(),
  duration_ms: z.number().int().nullable(),
  error: z.string().nullable(),
  ...jobErrorShape,
  error_retryable: z.boolean().nullable(),
});
export type JobStateEvent = z.infer<typeof JobStateEvent>;

const intOrNull = (value: unknown) => (typeof value === "number" && Number.isInteger(value) ? value : null);

export function toJobStateEvent(state: LiveJobState): JobStateEvent {
  const extra = state.extra as { usage?: unknown; model_version?: unknown; records_done?: unknown; record_count?: unknown };
  const usage = extra.usage && typeof extra.usage === "object" && !Array.isArray(extra.usage) ? (extra.usage as JsonObject) : null;
  return {
    job_id: state.job_id,
    status: state.status,
    stage: state.stage,
    progress: state.progress,
    stage_timings: state.stage_timings,
    usage,
    estimated_cost_usd: state.estimated_cost_usd,
    actual_cost_usd: jobReportFields(state.extra).actual_cost_usd,
    model_version: typeof extra.model_version === "string" ? extra.model_version : state.model_version,
    items_done: intOrNull(extra.records_done),
    items_total: intOrNull(extra.record_count),
    created_at: state.created_at,
    started_at: state.started_at,
    completed_at: state.completed_at,
    duration_ms: state.duration_ms,
    error: state.error,
    ...specErrorFields(state.error_category),
    error_retryable: state.error_retryable,
  };
}
