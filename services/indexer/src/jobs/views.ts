import type { IndexerJob, IndexerJobListItem, LiveJobState } from "@litrev/contracts";
import type { StoredJob } from "@litrev/jobs";
import type { IndexerLiveExtra } from "./job-input";

type JobView = LiveJobState | StoredJob;

/** The poll response: the live (or stored) state plus the records finished so far. */
export function toIndexerJob(state: JobView, partial: { items: unknown[]; errors: string[] }): IndexerJob {
  const extra = (state.extra ?? {}) as IndexerLiveExtra;
  return {
    job_id: state.job_id,
    status: state.status,
    progress: state.progress,
    partial_results: partial.items as IndexerJob["partial_results"],
    errors: partial.errors,
    usage: extra.usage ?? {},
    error: state.error,
    error_category: state.error_category,
    error_retryable: state.error_retryable,
    duration_ms: state.duration_ms,
    estimated_cost_usd: state.estimated_cost_usd,
    model_version: extra.model_version ?? state.model_version,
    created_at: state.created_at,
    completed_at: state.completed_at,
  };
}

export function toListItem(state: JobView): IndexerJobListItem {
  const config = state.config as { model?: unknown; record_count?: unknown };
  return {
    job_id: state.job_id,
    status: state.status,
    progress: state.progress,
    model: typeof config.model === "string" ? config.model : "",
    record_count: typeof config.record_count === "number" ? config.record_count : 0,
    duration_ms: state.duration_ms,
    estimated_cost_usd: state.estimated_cost_usd,
    created_at: state.created_at,
    completed_at: state.completed_at,
  };
}
