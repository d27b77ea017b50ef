import {
  CreateIndexerJobMessage,
  DEFAULT_MODEL,
  indexerResultChars,
  LIMIT_CEILINGS,
  type IndexerField,
  type Provenance,
  type ServiceConfigResponse,
} from "@litrev/contracts";
import { defineJobKind, type JobHandler } from "@litrev/jobs";
import { estimateIndexer } from "../estimate";
import type { ExtractionPlan } from "../pipeline/extract-record";
import { extractionPlan } from "../pipeline/plan";
import { PROMPTS } from "../prompts";
import type { IndexerJobInput, IndexerJobParams, IndexerLiveExtra } from "./job-input";

export interface IndexerKindOptions {
  config: () => ServiceConfigResponse;
  run: JobHandler;
  /** The job's provenance as admitted (pinned model, prompts, settings); the run refreshes it. */
  describe?: (input: { model: string; resolved: string; fields: IndexerField[]; plan: ExtractionPlan }) => Provenance;
}

/**
 * Indexer jobs: records as the list, no one-per-project rule (`JOB_KINDS`: the spec gives them
 * no 409, so several may run for one project).
 */
export function indexerJobKind(options: IndexerKindOptions) {
  return defineJobKind({
    service: "indexer",
    createMessage: CreateIndexerJobMessage,
    maxItems: LIMIT_CEILINGS.records,
    defaultModel: DEFAULT_MODEL.indexerRun,
    estimateOf: (request, count) => ({ fields: request.fields, record_count: count, model: request.model }),
    estimate: (request, aliases) => estimateIndexer(request, options.config(), aliases),
    resultChars: (request, count) => indexerResultChars(count, request.fields.length),
    ceilingScope: (_request, count) => `${count} records`,
    // A mock job calls no provider: no ceiling, no key kept, no cost.
    unmetered: (request) => request.mock,
    admit: (request, { count, resolved, priced }) => {
      const settings: Omit<IndexerJobInput, "records"> = {
        fields: request.fields,
        model: request.model,
        project_context: request.project_context ?? null,
        ...(request.mock ? { mock: true } : {}),
      };
      const params: IndexerJobParams = { model_resolved: resolved, priced };
      const extra: IndexerLiveExtra = { records_done: 0, record_count: count };
      return {
        config: { model: request.model, mode: request.mode, record_count: count, fields_count: request.fields.length, mock: request.mock },
        params,
        input: settings,
        extra: extra as Record<string, unknown>,
        provenance: options.describe?.({ model: request.model, resolved, fields: request.fields, plan: extractionPlan(settings, options.config()) }),
        // The provider's dated model string replaces this once the first record is answered.
        modelVersion: resolved,
      };
    },
    prompts: PROMPTS.builtIn,
    run: options.run,
  });
}
