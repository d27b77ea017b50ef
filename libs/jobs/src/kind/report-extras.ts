import type { JobUsage, Provenance } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";

/** A run's provider usage so far, summed over its calls (restored checkpoints included). */
export interface RunTotals {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** Provider replies. */
  calls: number;
  /** Attempts sent again (absent: none counted). */
  retries?: number | undefined;
  /** Replies per model string the provider reported (the provenance's `models_used`, in first-seen order). */
  models?: Readonly<Record<string, number>> | undefined;
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
    input_tokens: totals.input_tokens,
    cached_input_tokens: totals.cached_input_tokens,
    output_tokens: totals.output_tokens,
    total_tokens: totals.input_tokens + totals.output_tokens,
    estimated_cost_usd: round6(totals.cost_usd),
    calls: totals.calls,
    retries: totals.retries ?? 0,
  };
  const modelsUsed = Object.entries(totals.models ?? {}).map(([model, calls]) => ({ model, calls }));
  return {
    usage,
    actual_cost_usd: priced ? round6(totals.cost_usd) : null,
    ...(provenance ? { provenance: { ...provenance, models_used: modelsUsed } } : {}),
  };
}
