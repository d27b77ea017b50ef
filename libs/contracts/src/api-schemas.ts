import { z } from "zod";
import { PromptMetadata, ServiceConfigResponse, ModelAliasesResponse } from "./config";
import { ProjectContext, Usage } from "./common";
import { AnalyzeQuestionResponse, ConsolidationProposal, CriterionResponse, DuplicateGroup, PicosElements } from "./criteria";
import { HealthResponse, ReadyResponse } from "./health";
import {
  CreateIndexerJobResponse,
  Evidence,
  ExtractedValue,
  ExtractionWarning,
  FieldSuggestion,
  IndexerEstimateResponse,
  IndexerField,
  IndexerJob,
  IndexerJobListItem,
  IndexerRunResponse,
  TagGroup,
} from "./indexer";
import {
  CreateScreeningJobResponse,
  CriterionVerdict,
  ScreeningCluster,
  ScreeningEstimateResponse,
  ScreeningJob,
  ScreeningJobListItem,
  ScreeningResultItem,
} from "./screening";

/**
 * The names the OpenAPI document gives the API's resources (its `components.schemas`), so that a
 * generated client has a type per resource. A registry of its own, not zod's global one: the
 * schemas sent to the language model are built with `z.toJSONSchema` too and must stay inline.
 * A schema used only in requests keeps its name; one used both ways also gets `<Name>Input`
 * (defaults make fields optional on the way in).
 */
export const apiSchemas = z.registry<{ id: string }>();

// Descriptions (`.describe()`) live in zod's global registry. The document reads metadata from this
// registry alone, so its lookups fall back to the global one (fastify-type-provider-zod copies
// registries the same way, through the same internal map).
const registry = apiSchemas as unknown as { _map: WeakMap<object, unknown> };
const global = z.globalRegistry as unknown as { _map: WeakMap<object, unknown> };
registry._map = new (class extends WeakMap<object, unknown> {
  override get(key: object) {
    return super.get(key) ?? global._map.get(key);
  }
  override has(key: object) {
    return super.has(key) || global._map.has(key);
  }
})();

const NAMES: [z.ZodType, string][] = [
  [ScreeningJob, "ScreeningJob"],
  [ScreeningJobListItem, "ScreeningJobListItem"],
  [ScreeningResultItem, "ScreeningResult"],
  [CriterionVerdict, "CriterionVerdict"],
  [ScreeningCluster, "ScreeningCluster"],
  [CreateScreeningJobResponse, "JobCreated"],
  [ScreeningEstimateResponse, "ScreeningEstimate"],
  [IndexerJob, "IndexerJob"],
  [IndexerJobListItem, "IndexerJobListItem"],
  [CreateIndexerJobResponse, "IndexerJobCreated"],
  [IndexerRunResponse, "IndexerRunResponse"],
  [IndexerField, "IndexerField"],
  [ExtractedValue, "ExtractedValue"],
  [Evidence, "Evidence"],
  [ExtractionWarning, "ExtractionWarning"],
  [FieldSuggestion, "FieldSuggestion"],
  [TagGroup, "TagGroup"],
  [IndexerEstimateResponse, "IndexerEstimate"],
  [ProjectContext, "ProjectContext"],
  [CriterionResponse, "CriterionResponse"],
  [AnalyzeQuestionResponse, "QuestionAnalysis"],
  [PicosElements, "PicosElements"],
  [DuplicateGroup, "DuplicateGroup"],
  [ConsolidationProposal, "ConsolidationProposal"],
  [Usage, "Usage"],
  [ServiceConfigResponse, "ServiceConfigResponse"],
  [PromptMetadata, "PromptMetadata"],
  [ModelAliasesResponse, "ModelAliases"],
  [HealthResponse, "Health"],
  [ReadyResponse, "Readiness"],
];
for (const [schema, id] of NAMES) apiSchemas.add(schema, { ...z.globalRegistry.get(schema), id });

/** The spec calls the screening poll response this; the document names it as an alias of `ScreeningJob`. */
export const SCREENING_POLL_RESPONSE_NAME = "ScreeningResultResponse";
