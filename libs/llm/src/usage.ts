import type { LlmUsage, Usage } from "@litrev/contracts";

export const ZERO_USAGE: Readonly<LlmUsage> = Object.freeze({
  calls: 0,
  input_tokens: 0,
  cached_input_tokens: 0,
  output_tokens: 0,
  cost_usd: 0,
  retries: 0,
  models: {},
});

/** The one adder of usage: of calls, of a stage's units, of a job's checkpoints. */
export function addUsage(a: LlmUsage, b: LlmUsage): LlmUsage {
  const models = { ...a.models };
  for (const [model, calls] of Object.entries(b.models ?? {})) models[model] = (models[model] ?? 0) + calls;
  return {
    calls: a.calls + b.calls,
    input_tokens: a.input_tokens + b.input_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cost_usd: a.cost_usd + b.cost_usd,
    retries: (a.retries ?? 0) + (b.retries ?? 0),
    models,
  };
}

/** Sum of any number of usages (a call's repair attempts, a request's records). */
export function accumulateUsage(usages: Iterable<LlmUsage>): LlmUsage {
  let total: LlmUsage = ZERO_USAGE;
  for (const usage of usages) total = addUsage(total, usage);
  return total;
}

/** The model string that answered first (the first one reported), if any call was answered. */
export function firstModel(usage: LlmUsage): string | undefined {
  return Object.keys(usage.models ?? {})[0];
}

/** The contracts' `Usage` of a synchronous response; cost rounded to micro-dollars to keep float noise out. */
export function toContractUsage(usage: LlmUsage): Usage {
  return {
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
    cached_input_tokens: usage.cached_input_tokens,
    estimated_cost_usd: Math.round(usage.cost_usd * 1_000_000) / 1_000_000,
  };
}
