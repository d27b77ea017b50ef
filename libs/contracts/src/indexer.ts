import { z } from "zod";
import { jobErrorShape, specErrorFields } from "./errors";
import { EstimateConfidence, JobStatus, JsonObject, ProjectContext, Timestamp, Usage, uniqueIds } from "./common";
import { LIMIT_CEILINGS } from "./ceilings";
import { DEFAULT_MODEL } from "./models";
import { IndexerField } from "./indexer-fields";
import { JobUsage, jobReportFields, pollReportFields, Provenance } from "./provenance";

export { DataTypePrimary, IndexerField } from "./indexer-fields";

/** Defaults of the configured bounds (docs/limits.md): larger synchronous runs must use jobs. */
export const MAX_INDEXER_RUN_RECORDS = 1_000;
export const MAX_INDEXER_JOB_RECORDS = 50_000;
export const MAX_INDEXER_FIELDS = 50;

/** Output-record keys of their own: a field with one of these names would overwrite them. */
export const RESERVED_FIELD_NAMES = ["ID", "indexing_status"] as const;

/** Field lists must be non-empty with unique names (a duplicate would overwrite a result key). */
export const IndexerFieldList = z
  .array(IndexerField)
  .min(1)
  .max(LIMIT_CEILINGS.fields)
  .superRefine((fields, ctx) => {
    const seen = new Set<string>();
    fields.forEach((field, index) => {
      if (seen.has(field.name)) {
        ctx.addIssue({ code: "custom", path: [index, "name"], message: `Duplicate field name '${field.name}'` });
      }
      if ((RESERVED_FIELD_NAMES as readonly string[]).includes(field.name)) {
        ctx.addIssue({ code: "custom", path: [index, "name"], message: `'${field.name}' is reserved for the output record` });
      }
      seen.add(field.name);
    });
  });

export const IndexerRecord = z.looseObject({
  ID: z.union([z.string().min(1).max(200), z.number().int()]),
  Title: z.string().max(LIMIT_CEILINGS.title).nullish().transform((v) => v ?? ""),
  Abstract: z.string().max(LIMIT_CEILINGS.abstract).nullish().transform((v) => v ?? ""),
});
export type IndexerRecord = z.infer<typeof IndexerRecord>;

/** Records with distinct IDs: an output record and an export line must each mean one input record. */
const RecordList = z.array(IndexerRecord).max(LIMIT_CEILINGS.records).superRefine(uniqueIds((record) => record.ID, "record IDs"));

export const IndexerMode = z.enum(["test", "sample", "full"]);
export type IndexerMode = z.infer<typeof IndexerMode>;
export const MODE_RECORD_LIMIT: Record<IndexerMode, number> = { test: 5, sample: 20, full: Infinity };

/**
 * Mock mode (the original documents it on every mutating endpoint; the spec lists it on some):
 * canned placeholder data, no provider call, no key needed, no cost.
 */
const MockFlag = z.boolean().default(false).describe("Deterministic placeholder data: no provider call, no provider key needed, no cost (ceiling not enforced)");

// Not in the spec (an addition, docs/security.md): the screening job's ceiling, for indexer jobs.
const MaxJobCost = z
  .number()
  .min(0)
  .nullish()
  .describe("Rejection ceiling (400 when the estimate is greater), also enforced while the job runs: a job whose provider-reported cost exceeds it ends failed, keeping its finished records");

const jobFields = {
  fields: IndexerFieldList,
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerRun),
  project_context: ProjectContext.nullish(),
  mode: IndexerMode.default("full"),
  project_id: z.number().int().nullish(),
  mock: MockFlag,
};

/**
 * `mode` picks the records to process; the rest are dropped at the edge so they never travel
 * further. A synchronous run may process at most MAX_INDEXER_RUN_RECORDS (the gateway checks the
 * configured number, the schema its ceiling); the 400 says to use jobs.
 */
function selectByMode<T extends { records: unknown[]; mode: IndexerMode }>(request: T): T {
  const limit = MODE_RECORD_LIMIT[request.mode];
  return request.records.length > limit ? { ...request, records: request.records.slice(0, limit) } : request;
}

export const IndexerRunRequest = z
  .object({
    records: RecordList.min(1),
    ...jobFields,
    max_workers: z.number().int().min(1).max(32).default(4),
    batch_size: z.number().int().min(1).max(500).default(50),
  })
  .superRefine((request, ctx) => {
    const processed = Math.min(request.records.length, MODE_RECORD_LIMIT[request.mode]);
    if (processed > LIMIT_CEILINGS.runRecords) {
      ctx.addIssue({
        code: "custom",
        path: ["records"],
        message:
          `a synchronous run processes at most ${LIMIT_CEILINGS.runRecords} records (${processed} requested); ` +
          "use POST /v1/indexer/jobs for larger sets, or mode test/sample",
      });
    }
  })
  .transform(selectByMode);
export type IndexerRunRequest = z.infer<typeof IndexerRunRequest>;

export const CreateIndexerJobRequest = z
  .object({
    records: RecordList.min(1),
    ...jobFields,
    max_estimated_cost_usd: MaxJobCost,
  })
  .transform(selectByMode);
export type CreateIndexerJobRequest = z.infer<typeof CreateIndexerJobRequest>;

/**
 * The creation as the indexer service takes it over NATS: `records` already cut by `mode`, and
 * empty when the gateway stored them as the job's input list (header `x-litrev-staged-input`).
 */
export const CreateIndexerJobMessage = z
  .object({
    records: RecordList,
    ...jobFields,
    max_estimated_cost_usd: MaxJobCost,
  })
  .transform(selectByMode);

/** One verified quote: `source_text.slice(start, end)` is the quote (see docs/indexer.md). */
export const Evidence = z
  .object({
    quote: z.string().describe("The supporting text exactly as it appears in the source, located by the service"),
    source: z.enum(["title", "abstract"]).describe("Which text of the input record the quote comes from"),
    start: z.number().int().describe("Offset of the quote's first character in the source (UTF-16 code units, as String.prototype.slice)"),
    end: z.number().int().describe("Offset just past the quote's last character: source.slice(start, end) === quote"),
    match: z
      .enum(["exact", "normalized"])
      .describe("exact: the model's quote was found verbatim; normalized: found after folding whitespace, case, accents and quote/dash variants"),
  })
  .describe("A quotation supporting an extracted value, verified against the record by the service");
export type Evidence = z.infer<typeof Evidence>;

/** Why the service changed a value or its confidence (docs/indexer.md, "Flags"). */
export const ValueFlag = z.enum(["coerced", "invalid_value", "not_in_enum", "out_of_range", "quote_not_found", "unverified"]);
export type ValueFlag = z.infer<typeof ValueFlag>;

export const ExtractedValue = z
  .object({
    value: z
      .union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.array(z.number()), z.null()])
      .describe("Typed by data_type_primary: text → string, number → number, yes_no → boolean, list_text → string[], list_number → number[]; null when not stated"),
    confidence: z.number().describe("0 to 1; lowered by the service when a quote could not be verified or the value had to be corrected"),
    evidence: z.array(Evidence),
    flags: z.array(ValueFlag).optional().describe("What the service changed or could not verify (empty when nothing)"),
  })
  .describe("One extracted field");
export type ExtractedValue = z.infer<typeof ExtractedValue>;

/** Record outcomes; `errors` carries the reason for every status other than `ok`. */
export const IndexingStatus = z.enum(["ok", "no_abstract", "error", "not_processed"]);
export type IndexingStatus = z.infer<typeof IndexingStatus>;

export const IndexerOutputRecord = z
  .object({
    ID: z.union([z.string(), z.number()]),
    indexing_status: z
      .string()
      .describe(
        "ok; no_abstract (nothing to extract from, values null); error (this record's extraction failed, see errors); " +
          "not_processed (a synchronous run ran out of time before this record, see errors)",
      ),
  })
  .catchall(ExtractedValue)
  .describe("One processed record: ID, indexing_status and one entry per requested field name");

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
  /** Tokens, calls and retries spent so far; kept after the job ends. */
  usage: JobUsage,
  error: z.string().nullable(),
  ...jobErrorShape,
  error_retryable: z.boolean().nullable(),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  model_version: z.string(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
  /** What a review reports about the model behind the job (null for jobs recorded before provenance existed). */
  provenance: Provenance.nullable(),
  /** The cost of the tokens the provider reported, at the model's price (null: no price, or a mock job). */
  actual_cost_usd: z.number().nullable(),
});
export type IndexerJob = z.infer<typeof IndexerJob>;

export const IndexerJobListItem = z.object({
  job_id: z.string(),
  status: JobStatus,
  progress: z.number(),
  model: z.string(),
  record_count: z.number().int(),
  /** Added (issue 19): the job's project and, for a failed job, its error. */
  project_id: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  /** The cost of the tokens the provider reported so far (null: no price, or a mock job). */
  actual_cost_usd: z.number().nullable(),
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
export type IndexerEstimateResponse = z.infer<typeof IndexerEstimateResponse>;

export const ExtractionWarning = z.object({
  field: z.string(),
  risk_level: z.enum(["low", "medium", "high"]).default("medium"),
  reason: z.string(),
  suggested_fallback: z.string(),
});
export type ExtractionWarning = z.infer<typeof ExtractionWarning>;

export const SuggestFieldsRequest = z.object({
  project_context: ProjectContext.nullish(),
  pico: JsonObject.nullish(),
  sample_records: z.array(JsonObject).max(50).nullish(),
  existing_fields: z.array(z.string().max(100)).max(MAX_INDEXER_FIELDS * 4).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
  mock: MockFlag,
});
export type SuggestFieldsRequest = z.infer<typeof SuggestFieldsRequest>;

export const SuggestFieldsResponse = z.object({
  fields: z.array(IndexerField),
  warnings: z.array(ExtractionWarning),
});
export type SuggestFieldsResponse = z.infer<typeof SuggestFieldsResponse>;

export const RefineFieldsRequest = z.object({
  fields: IndexerFieldList,
  project_context: ProjectContext.nullish(),
  sample_records: z.array(JsonObject).max(50).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
  mock: MockFlag,
});
export type RefineFieldsRequest = z.infer<typeof RefineFieldsRequest>;

export const FieldSuggestion = z.object({
  action: z.enum(["add", "modify", "remove", "merge"]),
  field: IndexerField,
  rationale: z.string(),
  original_field_name: z.string().optional(),
  target_field_name: z.string().optional(),
});
export type FieldSuggestion = z.infer<typeof FieldSuggestion>;

export const RefineFieldsResponse = z.object({ suggestions: z.array(FieldSuggestion) });
export type RefineFieldsResponse = z.infer<typeof RefineFieldsResponse>;

export const GroupTagsRequest = z.object({
  field_name: z.string().min(1).max(100),
  values: z.array(z.string().max(1_000)).min(1).max(5_000),
  project_context: ProjectContext.nullish(),
  num_groups_hint: z.number().int().min(1).max(100).nullish(),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.indexerSuggestFields),
  mock: MockFlag,
});
export type GroupTagsRequest = z.infer<typeof GroupTagsRequest>;

export const TagGroup = z.object({
  name: z.string(),
  values: z.array(z.string()),
  rationale: z.string().optional(),
});
export type TagGroup = z.infer<typeof TagGroup>;

export const GroupTagsResponse = z.object({
  groups: z.array(TagGroup),
  usage: Usage.partial(),
});
export type GroupTagsResponse = z.infer<typeof GroupTagsResponse>;
export type CreateIndexerJobResponse = z.infer<typeof CreateIndexerJobResponse>;

/** Live or stored fields an indexer job view is built from (a `LiveJobState` or a stored job). */
export interface IndexerJobRecord {
  job_id: string;
  status: z.infer<typeof JobStatus>;
  progress: number;
  error: string | null;
  error_category: string | null;
  error_retryable: boolean | null;
  model_version: string;
  config: Record<string, unknown>;
  extra: Record<string, unknown>;
  project_id?: number | null;
  duration_ms: number | null;
  estimated_cost_usd: number | null;
  created_at: string;
  completed_at: string | null;
}

/** The poll response: the live (or stored) state plus the records finished so far. */
export function toIndexerJob(record: IndexerJobRecord, finished: { items: unknown[]; errors: string[] }): IndexerJob {
  const extra = record.extra as { model_version?: string };
  const report = pollReportFields(record.extra, record.status);
  return {
    job_id: record.job_id,
    status: record.status,
    progress: record.progress,
    partial_results: finished.items as IndexerJob["partial_results"],
    errors: finished.errors,
    usage: report.usage,
    error: record.error,
    ...specErrorFields(record.error_category),
    error_retryable: record.error_retryable,
    duration_ms: record.duration_ms,
    estimated_cost_usd: record.estimated_cost_usd,
    model_version: extra.model_version ?? record.model_version,
    created_at: record.created_at,
    completed_at: record.completed_at,
    provenance: report.provenance,
    actual_cost_usd: report.actual_cost_usd,
  };
}

export function toIndexerJobListItem(record: IndexerJobRecord): IndexerJobListItem {
  const config = record.config as { model?: unknown; record_count?: unknown };
  return {
    job_id: record.job_id,
    status: record.status,
    progress: record.progress,
    model: typeof config.model === "string" ? config.model : "",
    record_count: typeof config.record_count === "number" ? config.record_count : 0,
    project_id: record.project_id ?? null,
    error: record.error,
    duration_ms: record.duration_ms,
    estimated_cost_usd: record.estimated_cost_usd,
    actual_cost_usd: jobReportFields(record.extra).actual_cost_usd,
    created_at: record.created_at,
    completed_at: record.completed_at,
  };
}
