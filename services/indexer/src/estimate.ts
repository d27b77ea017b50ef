import type { z } from "zod";
import {
  ESTIMATE_DISCLAIMER,
  type IndexerEstimateRequest,
  type IndexerEstimateResponse,
  type IndexerField,
  type ServiceConfigResponse,
} from "@litrev/contracts";
import { costUsd, estimateTokens, isReasoningModel, resolveModel } from "@litrev/llm";
import { extractionPlan } from "./pipeline/plan";

/**
 * The indexer's token estimate (docs/indexer.md, "Estimate"). One provider call per record:
 *
 *   input  = R × (P + A)
 *   output = R × (B + Σ_f O(f) + Z)
 *
 * R = records; P = the fixed part of every call, measured from the prompt this service would send
 * for these fields (system prompt + field list, at 4 characters per token) plus 15 tokens per field
 * for the reply schema (providers render it compactly into the prompt, not as the JSON we send);
 * A = 480 tokens, the mean title + abstract of the reference dataset (records with an abstract: 486); B = 10 tokens of reply
 * framing; O(f) = 60 tokens per field at depth minimal, 110 at depth full, +20 for list types;
 * Z = 200 reasoning tokens per record for reasoning models (GPT-5, o-series), else 0.
 */
export const ESTIMATE = {
  recordTokens: 480,
  schemaTokensPerField: 15,
  replyBaseTokens: 10,
  fieldTokens: { minimal: 60, full: 110 },
  listExtraTokens: 20,
  reasoningTokens: 200,
} as const;

type Aliases = Readonly<Record<string, string>>;

/** Output tokens one record's reply needs for these fields (reasoning or not: what the alias means in `aliases`). */
export function outputTokensPerRecord(fields: readonly IndexerField[], model: string, aliases?: Aliases): number {
  let tokens: number = ESTIMATE.replyBaseTokens;
  for (const field of fields) {
    tokens += ESTIMATE.fieldTokens[field.depth ?? "minimal"];
    if (field.data_type_primary === "list_text" || field.data_type_primary === "list_number") tokens += ESTIMATE.listExtraTokens;
  }
  return tokens + (isReasoningModel(resolveModel(model, aliases)) ? ESTIMATE.reasoningTokens : 0);
}

/** P: system prompt, field list and reply schema as sent with every record. */
export function fixedPromptTokens(fields: IndexerField[], model: string, config: ServiceConfigResponse): number {
  const plan = extractionPlan({ fields, model }, config);
  // The user message adds "Record / Title / Abstract" labels around the record: about 10 tokens.
  return estimateTokens(plan.system) + estimateTokens(plan.prefix) + ESTIMATE.schemaTokensPerField * fields.length + 10;
}

/** Priced through `aliases` (the live table: job admission and the estimate route pass the provider client's); default: the environment's. */
export function estimateIndexer(request: IndexerEstimateRequest, config: ServiceConfigResponse, aliases?: Aliases): z.input<typeof IndexerEstimateResponse> {
  const records = request.record_count;
  const input = records * (fixedPromptTokens(request.fields, request.model, config) + ESTIMATE.recordTokens);
  const output = records * outputTokensPerRecord(request.fields, request.model, aliases);
  const cost = costUsd({ model: request.model, inputTokens: input, outputTokens: output }, aliases);
  return {
    estimated_input_tokens: input,
    estimated_output_tokens: output,
    estimated_cost_usd: Math.round(cost * 1_000_000) / 1_000_000,
    confidence: "approximate",
    disclaimer: ESTIMATE_DISCLAIMER,
  };
}
