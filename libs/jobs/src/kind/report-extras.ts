import { fitProvenance, type JobUsage, type LlmUsage, type Provenance } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";

/** A run's provenance fitted once (it is written with every state change; cutting large asked texts costs a serialisation). */
const fittedOnce = new WeakMap<Provenance, Provenance>();
function fitted(provenance: Provenance): Provenance {
  let fit = fittedOnce.get(provenance);
  if (!fit) fittedOnce.set(provenance, (fit = fitProvenance(provenance)));
  return fit;
}

const round6 = (usd: number) => Math.round(usd * 1_000_000) / 1_000_000;

/**
 * A job's report fields as its live extras carry them (`jobReportFields` of @litrev/contracts reads
 * them back), the same for every kind: usage so far, the actual cost (null when the job is not
 * priced: a mock run or a model without a price) and the provenance with the models the provider
 * reported (its asked texts cut to fit the job's record when they are too large: `fitProvenance`).
 */
export function jobReportExtras(totals: LlmUsage, provenance: Provenance | undefined, priced: boolean): JsonRecord {
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
    ...(provenance ? { provenance: { ...fitted(provenance), models_used: modelsUsed } } : {}),
  };
}
