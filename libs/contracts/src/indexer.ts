import { z } from "zod";
import { EstimateConfidence, JobStatus, JsonObject, ProjectContext, Timestamp, Usage } from "./common";
import { DEFAULT_MODEL } from "./models";

/** Documented ceilings (docs/limits.md): larger synchronous runs must use jobs. */
export const MAX_INDEXER_RUN_RECORDS = 1_000;
export const MAX_INDEXER_JOB_RECORDS = 20_000;
export const MAX_INDEXER_FIELDS = 50;

export const DataTypePrimary = z.enum(["text", "number", "yes_no", "list_text", "list_number"]);
export type DataTypePrimary = z.infer<typeof DataTypePrimary>;

export const IndexerField = z.object({
  name: z.string().min(1).max(100),
  description: z.string().max(5_000),
  data_type_primary: DataTypePrimary,
  data_type_secondary: z.string().max(50).default("NA"),
  examples: z.array(z.string().max(500)).max(100).optional(),
  examples_mode: z.enum(["guide", "enum"]).optional(),
  depth: z.enum(["minimal", "full"]).optional(),
});
export type IndexerField = z.infer<typeof IndexerField>;

/** Field lists must be non-empty with unique names (a duplicate would overwrite a result key). */
export const IndexerFieldList = z
  .array(IndexerField)
  .min(1)
  .max(MAX_INDEXER_FIELDS)
  .superRefine((fields, ctx) => {
    const seen = new Set<string>();
    fields.forEach((field, index) => {
      if (seen.has(field.name)) {
        ctx.addIssue({ code: "custom", path: [index, "name"], message: `Duplicate field name '${field.name}'` });
      }
      seen.add(field.name);
    });
  });

export const IndexerRecord = z.looseObject({
  ID: z.union([z.string().min(1).max(200), z.number().int()]),
  Title: z.string().max(5_000).nullish().transform((v) => v ?? ""),
  Abstract: z.string().max(50_000).nullish().transform((v) => v ?? ""),
});
export type IndexerRecord = z.infer<typeof IndexerRecord>;

export const IndexerMode = z.enum(["test", "sample", "full"]);
export type IndexerMode = z.infer<typeof IndexerMode>;
export const MODE_RECORD_LIMIT: Record<IndexerMode, number> = { test: 5, sample: 20, full: Infinity };

const jobFields = {
  fields: IndexerFieldList,
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerRun),
  project_context: ProjectContext.nullish(),
  mode: IndexerMode.default("full"),
  project_id: z.number().int().nullish(),
};

export const IndexerRunRequest = z.object({
  records: z.array(IndexerRecord).min(1).max(MAX_INDEXER_JOB_RECORDS),
  ...jobFields,
  max_workers: z.number().int().min(1).max(32).default(4),
  batch_size: z.number().int().min(1).max(500).default(50),
});
export type IndexerRunRequest = z.infer<typeof IndexerRunRequest>;

export const CreateIndexerJobRequest = z.object({
  records: z.array(IndexerRecord).min(1).max(MAX_INDEXER_JOB_RECORDS),
  ...jobFields,
});
export type CreateIndexerJobRequest = z.infer<typeof CreateIndexerJobRequest>;

/** One verified quote: `source_text.slice(start, end)` is the quote (see docs/indexer.md). */
export const Evidence = z.object({
  quote: z.string(),
  source: z.enum(["title", "abstract"]),
  start: z.number().int(),
  end: z.number().int(),
  match: z.enum(["exact", "normalized"]),
});
export type Evidence = z.infer<typeof Evidence>;

export const ExtractedValue = z.object({
  value: z.unknown(),
  confidence: z.number(),
  evidence: z.array(Evidence),
});
export type ExtractedValue = z.infer<typeof ExtractedValue>;

export const IndexerOutputRecord = z
  .object({ ID: z.union([z.string(), z.number()]), indexing_status: z.string() })
  .catchall(z.unknown());
export type IndexerOutputRecord = z.infer<typeof IndexerOutputRecord>;

export const IndexerRunResponse = z.object({
  results: z.array(IndexerOutputRecord),
  errors: z.array(z.string()),
  usage: Usage,
  model_version: z.string(),
});
export type IndexerRunResponse = z.infer<typeof IndexerRunResponse>;

export const CreateIndexerJobResponse = z.object({
  job_id: z.string(),
  status: z.literal("pending"),
  progress: z.number(),
});

export const IndexerJob = z.object({
  job_id: z.string(),
  status: JobStatus,
  progress: z.number(),
  partial_results: z.array(IndexerOutputRecord),
  errors: z.array(z.string()),
  usage: Usage.partial(),
  error: z.string().nullable(),
  error_category: z.string().nullable(),
  error_retryable: z.boolean().nullable(),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  model_version: z.string(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
});
export type IndexerJob = z.infer<typeof IndexerJob>;

export const IndexerJobListItem = z.object({
  job_id: z.string(),
  status: JobStatus,
  progress: z.number(),
  model: z.string(),
  record_count: z.number().int(),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
});
export type IndexerJobListItem = z.infer<typeof IndexerJobListItem>;

export const IndexerEstimateRequest = z.object({
  fields: IndexerFieldList,
  record_count: z.number().int().min(0).max(10_000_000),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerRun),
});
export type IndexerEstimateRequest = z.infer<typeof IndexerEstimateRequest>;

export const IndexerEstimateResponse = z.object({
  estimated_input_tokens: z.number().int(),
  estimated_output_tokens: z.number().int(),
  estimated_cost_usd: z.number(),
  confidence: EstimateConfidence,
  disclaimer: z.string(),
});

export const ExtractionWarning = z.object({
  field: z.string(),
  risk_level: z.enum(["low", "medium", "high"]).default("medium"),
  reason: z.string(),
  suggested_fallback: z.string(),
});

export const SuggestFieldsRequest = z.object({
  project_context: ProjectContext.nullish(),
  pico: JsonObject.nullish(),
  sample_records: z.array(JsonObject).max(50).nullish(),
  existing_fields: z.array(z.string().max(100)).max(MAX_INDEXER_FIELDS * 4).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
  mock: z.boolean().default(false),
});
export type SuggestFieldsRequest = z.infer<typeof SuggestFieldsRequest>;

export const SuggestFieldsResponse = z.object({
  fields: z.array(IndexerField),
  warnings: z.array(ExtractionWarning),
});

export const RefineFieldsRequest = z.object({
  fields: IndexerFieldList,
  project_context: ProjectContext.nullish(),
  sample_records: z.array(JsonObject).max(50).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
});
export type RefineFieldsRequest = z.infer<typeof RefineFieldsRequest>;

export const FieldSuggestion = z.object({
  action: z.enum(["add", "modify", "remove", "merge"]),
  field: IndexerField,
  rationale: z.string(),
  original_field_name: z.string().optional(),
  target_field_name: z.string().optional(),
});

export const RefineFieldsResponse = z.object({ suggestions: z.array(FieldSuggestion) });

export const GroupTagsRequest = z.object({
  field_name: z.string().min(1).max(100),
  values: z.array(z.string().max(1_000)).min(1).max(5_000),
  project_context: ProjectContext.nullish(),
  num_groups_hint: z.number().int().min(1).max(100).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
});
export type GroupTagsRequest = z.infer<typeof GroupTagsRequest>;

export const TagGroup = z.object({
  name: z.string(),
  values: z.array(z.string()),
  rationale: z.string().optional(),
});

export const GroupTagsResponse = z.object({
  groups: z.array(TagGroup),
  usage: Usage.partial(),
});
