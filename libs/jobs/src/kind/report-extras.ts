import type { JobUsage, Provenance } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";

/** A run's provider usage so far, summed over its calls (restored checkpoints included). */
export interface RunTotals {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Provider replies. */
  calls: number;
  /** Attempts sent again. */
  retries: number;
  /** Replies per model string the provider reported (the provenance's `models_used`, in first-seen order). */
  models: Readonly<Record<string, number>>;
}

const round6 = (usd: number) => Math.round(usd * 1_000_000) / 1_000_000;

/**
 * A job's report fields as its live extras carry them (`jobReportFields` of @litrev/contracts reads
 * them back), the same for every kind: usage so far, the actual cost (null when the job is not
 * priced: a mock run or a model without a price) and the provenance with the models the provider
 * reported.
 */
export function jobReportExtras(totals: RunTotals, provenance: Provenance | undefined, priced: boolean): JsonRecord {
  const usage: JobUsage = {
    input_tokens: totals.inputTokens,
    cached_input_tokens: totals.cachedInputTokens,
    output_tokens: totals.outputTokens,
    total_tokens: totals.inputTokens + totals.outputTokens,
    estimated_cost_usd: round6(totals.costUsd),
    calls: totals.calls,
    retries: totals.retries,
  };
  const modelsUsed = Object.entries(totals.models).map(([model, calls]) => ({ model, calls }));
  return {
    usage,
    actual_cost_usd: priced ? round6(totals.costUsd) : null,
    ...(provenance ? { provenance: { ...provenance, models_used: modelsUsed } } : {}),
  };
}
