import { ESTIMATE_DISCLAIMER, screeningEstimateTokens, type ScreeningEstimateRequest, type ScreeningEstimateResponse } from "@litrev/contracts";
import { costUsd } from "@litrev/llm";

/** What the provider does with `n`, as far as the bill is concerned. */
export interface ProviderProfile {
  /** One choice per request (Ollama ignores `n`, llama.cpp refuses it): R votes are R requests. */
  ignoresN: boolean;
  /** Whether that is declared (`LLM_PROVIDER_N`) rather than learned from replies. */
  declared?: boolean;
}

const HONOURS_N: ProviderProfile = { ignoresN: false };

/**
 * Tokens per paper of the pipeline as it runs (default batch sizes: 10 papers a labelling call, 5 a
 * reasoning call; 4 criteria, 5 repetitions), fitted on data other than the screening bench's: the
 * 895 papers of the three SYNERGY reviews in data/synergy (`npm run bench -- forecast-fit`,
 * 2026-11-29 11:44 UTC: labelling overhead 47.8 a paper a pass where `n` is honoured, 50.9 where
 * votes are spread; a vote 19.3–19.5 output; the bench runs nagtegaal_2019). The
 * paper's own title and abstract is the spec's ~440 tokens (a team's abstracts are not known when
 * it asks for an estimate); what labelling adds to it was fitted. A criterion adds its line to every
 * labelling and reasoning system prompt (shared by a call's papers) and a verdict to every vote.
 * Nothing of this request shape is cached (each stage's fixed prefix is under the 1,024 tokens
 * a provider caches from), so the forecast prices every input token at the input price.
 */
const PER_PAPER = {
  /** One pass of labelling: the paper's title and abstract, as the spec assumes them. */
  paperText: 440,
  /** …plus its share of the system prompt and its record's framing (one pass serves all R votes where `n` is honoured). */
  labellingOverhead: 49,
  /** One vote: the decision line with a verdict per criterion. */
  voteOutput: 19.4,
  /** Reasoning sends the title, an abstract excerpt (SCREENING_REASONING_ABSTRACT_CHARS) and the votes. */
  reasoningInput: 315,
  reasoningOutput: 28.5,
  /** Clustering and assignment, which read the short reasons. */
  restInput: 67,
  restOutput: 7.1,
  /** Per criterion beyond the 4 measured: its share of a system prompt, and one verdict. */
  criterionInput: 5,
  criterionOutput: 2.5,
};
const MEASURED_CRITERIA = 4;

/** The service's forecast of a job's tokens: labelling billed once a paper where `n` is honoured, once a vote where it is not. */
export function forecastTokens(papers: number, repetitions: number, criteria: number, profile: ProviderProfile = HONOURS_N) {
  const extra = criteria - MEASURED_CRITERIA;
  const passes = profile.ignoresN ? repetitions : 1;
  const perPaperInput =
    passes * (PER_PAPER.paperText + PER_PAPER.labellingOverhead + PER_PAPER.criterionInput * extra) + PER_PAPER.reasoningInput + PER_PAPER.criterionInput * extra + PER_PAPER.restInput;
  const perPaperOutput = repetitions * (PER_PAPER.voteOutput + PER_PAPER.criterionOutput * extra) + PER_PAPER.reasoningOutput + PER_PAPER.restOutput;
  return { input: Math.max(0, Math.round(papers * perPaperInput)), output: Math.max(0, Math.round(papers * perPaperOutput)) };
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
  const tokens = screeningEstimateTokens(request.papers_count, request.repetitions, request.criteria_count);
  const forecast = forecastTokens(request.papers_count, request.repetitions, request.criteria_count, profile);
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

function roundUsd(value: number): number {
  return Math.round(value * 1_000_000) / 1_000_000;
}
