import type { Usage } from "@litrev/contracts";

/** Token counts and cost of one or more language-model calls. */
export interface LlmUsage {
  inputTokens: number;
  /** Part of `inputTokens` served from the prompt cache (billed at the cached-input price). */
  cachedInputTokens: number;
  /** Includes reasoning tokens, which are billed as output. */
  outputTokens: number;
  totalTokens: number;
  costUsd: number;
}

export const ZERO_USAGE: Readonly<LlmUsage> = Object.freeze({
  inputTokens: 0,
  cachedInputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  costUsd: 0,
});

export function addUsage(a: LlmUsage, b: LlmUsage): LlmUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    costUsd: a.costUsd + b.costUsd,
  };
}

/** Sum of any number of usages (a job's calls, a call's repair attempts). */
export function accumulateUsage(usages: Iterable<LlmUsage>): LlmUsage {
  let total: LlmUsage = { ...ZERO_USAGE };
  for (const usage of usages) total = addUsage(total, usage);
  return total;
}

/** The contracts' snake_case `Usage`; cost rounded to micro-dollars to keep float noise out of responses. */
export function toContractUsage(usage: LlmUsage): Usage {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    total_tokens: usage.totalTokens,
    cached_input_tokens: usage.cachedInputTokens,
    estimated_cost_usd: Math.round(usage.costUsd * 1_000_000) / 1_000_000,
  };
}
