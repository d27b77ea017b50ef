import type { IndexerField, ProjectContext, ServiceConfigResponse } from "@litrev/contracts";
import type { ReasoningEffort } from "@litrev/llm";
import { systemPrompt } from "../prompts";
import type { ExtractionPlan } from "./extract-record";
import { fieldSpecs } from "./field-spec";
import { extractionPrefix } from "./prompt";
import { replySchemaFor } from "./reply-schema";

export interface PlanInput {
  fields: IndexerField[];
  model: string;
  project_context?: ProjectContext | null | undefined;
}

const EFFORTS = new Set(["minimal", "low", "medium", "high"]);

/** Reasoning effort for extraction calls: `extra.reasoning_effort` in the config, else `low`. */
function reasoningEffortOf(config: ServiceConfigResponse): ReasoningEffort {
  const value = config.extra.reasoning_effort;
  return typeof value === "string" && EFFORTS.has(value) ? (value as ReasoningEffort) : "low";
}

/** Everything fixed for the records of one request, built once under the live configuration. */
export function extractionPlan(input: PlanInput, config: ServiceConfigResponse, providerKey?: string): ExtractionPlan {
  const specs = fieldSpecs(input.fields);
  return {
    model: input.model,
    specs,
    schema: replySchemaFor(specs),
    system: systemPrompt(config, "extraction"),
    prefix: extractionPrefix(specs, input.project_context),
    temperature: config.temperature,
    // Room for every field's value and quotes: the configured ceiling, raised for long field lists.
    maxOutputTokens: Math.max(config.max_output_tokens, 600 + 250 * specs.length),
    reasoningEffort: reasoningEffortOf(config),
    providerKey,
  };
}
