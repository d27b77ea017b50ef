import { ESTIMATE_DISCLAIMER, screeningEstimateTokens, type ScreeningEstimateRequest, type ScreeningEstimateResponse } from "@litrev/contracts";
import { costUsd } from "@litrev/llm";

/** One paper's title and abstract in tokens: real abstracts run about 440 (4 characters a token). */
export const PAPER_TOKENS = 440;

/** What the provider does with `n`, as far as the bill is concerned. */
export interface ProviderProfile {
  /** One choice per request (Ollama ignores `n`, llama.cpp refuses it): R votes are R requests. */
  ignoresN: boolean;
}

const HONOURS_N: ProviderProfile = { ignoresN: false };

/**
 * The spec's token formula, which is the bill where the provider honours `n` (a paper's R votes
 * come from one request, its text billed once). Where the provider ignores `n`, each further vote
 * is a request of its own that sends the paper again: labelling input is billed once per vote.
 */
export function screeningTokens(papers: number, repetitions: number, criteria: number, profile: ProviderProfile = HONOURS_N) {
  const spec = screeningEstimateTokens(papers, repetitions, criteria);
  const resent = profile.ignoresN ? PAPER_TOKENS * papers * (repetitions - 1) : 0;
  return { input: spec.input + resent, output: spec.output };
}

/**
 * The estimate: `estimated_*` are the spec's formula at the per-model table of @litrev/llm, whatever
 * the service knows of the provider (the job's `estimated_cost_usd` and the cost ceiling use the same
 * figure). `forecast_*` is the service's own forecast of the bill for the provider's handling of `n`.
 */
export function estimateScreening(
  request: ScreeningEstimateRequest,
  aliases?: Readonly<Record<string, string>>,
  profile: ProviderProfile = HONOURS_N,
): ScreeningEstimateResponse {
  const tokens = screeningTokens(request.papers_count, request.repetitions, request.criteria_count);
  const forecast = screeningTokens(request.papers_count, request.repetitions, request.criteria_count, profile);
  const price = (counts: { input: number; output: number }) => roundUsd(costUsd({ model: request.model, inputTokens: counts.input, outputTokens: counts.output }, aliases));
  return {
    estimated_input_tokens: tokens.input,
    estimated_output_tokens: tokens.output,
    estimated_cost_usd: price(tokens),
    model: request.model,
    papers_count: request.papers_count,
    repetitions: request.repetitions,
    confidence: "approximate",
    disclaimer: ESTIMATE_DISCLAIMER,
    forecast_input_tokens: forecast.input,
    forecast_output_tokens: forecast.output,
    forecast_cost_usd: price(forecast),
    forecast_provider_n: profile.ignoresN ? "ignored" : "honoured",
  };
}

export function roundUsd(value: number): number {
  return Math.round(value * 1_000_000) / 1_000_000;
}
