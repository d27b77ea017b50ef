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

/** The estimate, priced with the per-model table of @litrev/llm; job admission and its cost ceiling use the same. */
export function estimateScreening(
  request: ScreeningEstimateRequest,
  aliases?: Readonly<Record<string, string>>,
  profile: ProviderProfile = HONOURS_N,
): ScreeningEstimateResponse {
  const tokens = screeningTokens(request.papers_count, request.repetitions, request.criteria_count, profile);
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
