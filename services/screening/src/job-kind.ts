import {
  CreateScreeningJobMessage,
  DEFAULT_MODEL,
  LIMIT_CEILINGS,
  screeningResultChars,
  type Provenance,
  type ScreeningCriterion,
  type ScreeningJobParams,
} from "@litrev/contracts";
import { defineJobKind, type JobHandler } from "@litrev/jobs";
import { estimateScreening, type ProviderProfile } from "./estimate";
import type { PipelineSettings } from "./pipeline/run";
import { PROMPTS } from "./prompts";

export interface ScreeningKindOptions {
  pipeline: PipelineSettings;
  run: JobHandler;
  /** The job's provenance as admitted (pinned model, prompts, settings); the run refreshes it. */
  describe?: (params: ScreeningJobParams, criteria: ScreeningCriterion[], questions: string[]) => Provenance;
  /** What the provider does with `n` (declared or learned): estimates and ceilings bill votes by it. */
  provider?: () => ProviderProfile;
  /** Finds out what the provider does with `n` when nothing says yet (a probe), before an estimate is answered. */
  probeProvider?: (model: string) => Promise<void>;
}

/** Screening jobs: one active job per project, papers as the list, mock runs never metered. */
export function screeningJobKind(options: ScreeningKindOptions) {
  return defineJobKind({
    service: "screening",
    createMessage: CreateScreeningJobMessage,
    maxItems: LIMIT_CEILINGS.papers,
    defaultModel: DEFAULT_MODEL.screening,
    estimateOf: (request, count) => ({ papers_count: count, model: request.model, repetitions: request.repetitions, criteria_count: request.criteria.length }),
    estimate: (request, aliases) => estimateScreening(request, aliases, options.provider?.()),
    // Only repetitions make `n` matter to the bill; a mock job's estimate is never asked for.
    beforeEstimate: async (request) => {
      if (request.repetitions > 1) await options.probeProvider?.(request.model);
    },
    resultChars: (request, count) => screeningResultChars(count, request.repetitions, request.criteria.map((c) => c.name)),
    ceilingScope: (request, count) => `${count} papers × ${request.repetitions} repetitions`,
    unmetered: (request) => request.mock,
    admit: (request, { count, resolved, priced }) => {
      const params: ScreeningJobParams = {
        model: request.model,
        model_resolved: resolved,
        repetitions: request.repetitions,
        threshold: request.threshold,
        clusters_type: request.clusters_type ?? null,
        mock: request.mock,
        priced,
      };
      return {
        config: {
          model: request.model,
          repetitions: request.repetitions,
          threshold: request.threshold,
          clusters_type: request.clusters_type ?? null,
          mock: request.mock,
          papers_count: count,
          criteria_count: request.criteria.length,
          // PRISMA identification from the client's import, for the methods report (libs/jobs report.ts).
          ...(request.identification ? { identification: request.identification } : {}),
        },
        // Batch sizes are fixed at admission: a redelivered job must cut the same checkpoint units. A
        // provider declared to ignore `n` gets each vote of a paper with other batch-mates (vote-groups.ts);
        // where nothing is declared, the run finds it out (learned, or a probe) before its first labelling call.
        params: { ...params, pipeline: { ...options.pipeline, ...(!request.mock && spreadsVotes(options.provider?.()) ? { spreadVotes: true } : {}) } },
        input: { criteria: request.criteria, questions: request.questions },
        provenance: options.describe?.(params, request.criteria, request.questions),
        modelVersion: request.model,
      };
    },
    accepted: { stage: "" },
    prompts: PROMPTS.builtIn,
    run: options.run,
  });
}

const spreadsVotes = (profile: ProviderProfile | undefined): boolean => profile?.ignoresN === true && profile.declared === true;
