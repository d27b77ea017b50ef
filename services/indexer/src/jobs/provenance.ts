import type { IndexerField, Provenance, ServiceConfigResponse } from "@litrev/contracts";
import { sentParameters, type ProviderIdentity } from "@litrev/llm";
import { promptUse } from "@litrev/prompts";
import type { ServiceVersion } from "@litrev/runtime";
import type { ExtractionPlan } from "../pipeline/extract-record";
import { PROMPTS } from "../prompts";

export interface IndexerProvenanceInput {
  /** The model as the job was given it, and what it pointed to at admission. */
  model: string;
  resolved: string;
  /** The field definitions the job was given. */
  fields: IndexerField[];
  plan: Pick<ExtractionPlan, "system" | "prefix" | "temperature" | "maxOutputTokens" | "reasoningEffort">;
  config: ServiceConfigResponse;
  provider: ProviderIdentity;
  version: ServiceVersion;
}

/**
 * What an indexer job reports about its model: one extraction stage, its system prompt and the
 * field list that heads every user message (both hashed as sent; the record itself is not part of
 * either). `models_used` starts empty; the run fills it from the provider's replies.
 */
export function indexerProvenance(input: IndexerProvenanceInput): Provenance {
  const { plan, config } = input;
  const name = PROMPTS.prompts.extraction.name;
  return {
    model_requested: input.model,
    model_resolved: input.resolved,
    models_used: [],
    service_version: input.version,
    provider: input.provider,
    parameters: {
      extraction: sentParameters(input.resolved, { temperature: plan.temperature, maxOutputTokens: plan.maxOutputTokens, reasoningEffort: plan.reasoningEffort }),
    },
    repetitions: null,
    threshold: null,
    decision_rule:
      "One extraction per record, no votes: each field's value comes with the model's confidence and evidence quotes; " +
      "a quote not found verbatim in the record is dropped and lowers the confidence, a value without a verified quote is capped and flagged unverified.",
    prompts: [promptUse(name, config.prompt_template_id, plan.system), promptUse(`${name}.fields`, config.prompt_template_id, plan.prefix)],
    fields: input.fields,
  };
}
