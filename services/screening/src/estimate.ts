import { ESTIMATE_DISCLAIMER, screeningEstimateTokens, type ScreeningEstimateRequest, type ScreeningEstimateResponse } from "@litrev/contracts";
import { costUsd } from "@litrev/llm";

/** The spec's estimate: its token formula priced with the per-model table of @litrev/llm. */
export function estimateScreening(request: ScreeningEstimateRequest, aliases?: Readonly<Record<string, string>>): ScreeningEstimateResponse {
  const tokens = screeningEstimateTokens(request.papers_count, request.repetitions, request.criteria_count);
  const cost = costUsd({ model: request.model, inputTokens: tokens.input, outputTokens: tokens.output }, aliases);
  return {
    estimated_input_tokens: tokens.input,
    estimated_output_tokens: tokens.output,
    estimated_cost_usd: roundUsd(cost),
    model: request.model,
    papers_count: request.papers_count,
    repetitions: request.repetitions,
    confidence: "approximate",
    disclaimer: ESTIMATE_DISCLAIMER,
  };
}

export function roundUsd(value: number): number {
  return Math.round(value * 1_000_000) / 1_000_000;
}
