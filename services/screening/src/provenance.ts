import type { Provenance, ScreeningCriterion, ScreeningJobParams, ServiceConfigResponse } from "@litrev/contracts";
import type { ProviderIdentity } from "@litrev/llm";
import type { ServiceVersion } from "@litrev/runtime";
import { stageParameters, stagePrompts } from "./model/live-model";

export interface ScreeningProvenanceInput {
  params: Pick<ScreeningJobParams, "model" | "model_resolved" | "repetitions" | "threshold" | "mock">;
  criteria: ScreeningCriterion[];
  questions: string[];
  /** The service configuration the prompts and sampling settings come from. */
  config: ServiceConfigResponse;
  provider: ProviderIdentity;
  version: ServiceVersion;
}

/**
 * What a screening job reports about its model (RAISE, PRISMA-trAIce): built at admission and again
 * by the run that calls the model (its prompts are what that run sends). `models_used` starts empty;
 * the pipeline fills it from the provider's replies. A mock job names no provider and sends no prompts.
 */
export function screeningProvenance(input: ScreeningProvenanceInput): Provenance {
  const { params, config } = input;
  const resolved = params.model_resolved ?? params.model;
  return {
    model_requested: params.model,
    model_resolved: resolved,
    models_used: [],
    service_version: input.version,
    provider: params.mock ? { host: null, profile: "mock" } : input.provider,
    parameters: params.mock ? {} : stageParameters(config, resolved),
    repetitions: params.repetitions,
    threshold: params.threshold,
    decision_rule: decisionRule(params.repetitions, params.threshold),
    prompts: params.mock ? [] : stagePrompts(config, input),
    criteria: input.criteria.map((c) => ({ name: c.name, type: c.type, text: c.value })),
    questions: input.questions,
  };
}

/** The rule `LabelTable.decision` applies, in words. */
function decisionRule(repetitions: number, threshold: number): string {
  const votes = Math.max(0, Math.ceil(threshold));
  const rule =
    votes > repetitions
      ? `every paper is excluded: the threshold (${threshold}) is above the ${repetitions} votes a paper gets`
      : `include when at least ${votes} of ${repetitions} independent votes of the model say include, otherwise exclude`;
  return `${rule}. A paper the model kept losing (fewer than ${repetitions} votes) is marked include with an error, for a reviewer to screen.`;
}
