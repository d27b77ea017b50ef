import { z } from "zod";
import { jobErrorShape, specErrorFields } from "./errors";
import { bibliographyFields } from "./bibliography";
import { EstimateConfidence, JobStatus, JsonObject, Timestamp, uniqueIds } from "./common";
import { LIMIT_CEILINGS } from "./ceilings";
import { DEFAULT_MODEL } from "./models";
import { JobUsage, jobReportFields, pollReportFields, Provenance } from "./provenance";

/** Papers per screening job unless `MAX_SCREENING_PAPERS` says otherwise (docs/limits.md). */
export const MAX_SCREENING_PAPERS = 50_000;

const PaperId = z.union([z.string().min(1).max(200), z.number().int()]);

export const ScreeningPaper = z.object({
  id: PaperId,
  title: z.string().max(LIMIT_CEILINGS.title).default(""),
  abstract: z
    .string()
    .max(LIMIT_CEILINGS.abstract)
    .nullish()
    .transform((v) => v ?? ""),
  // Not in the spec (an addition; its paper is a dict, extra keys allowed): what the paper came with, kept for the exports, never sent to the model.
  ...bibliographyFields,
});
export type ScreeningPaper = z.infer<typeof ScreeningPaper>;

export const ScreeningCriterion = z.looseObject({
  name: z.string().max(1_000).default(""),
  type: z.enum(["include", "exclude"]),
  value: z.string().max(LIMIT_CEILINGS.criterionChars),
});
export type ScreeningCriterion = z.infer<typeof ScreeningCriterion>;

export const ClustersType = z.enum(["include", "exclude"]);

const PaperList = z.array(ScreeningPaper).max(LIMIT_CEILINGS.papers).superRefine(uniqueIds((paper) => paper.id, "paper ids"));

/**
 * Not in the spec (an addition): PRISMA's identification counts when the papers came from an import
 * (the console's sends them): records read from the database exports, and duplicates removed before
 * screening. Kept in the job's config for its methods report; never sent to the model.
 */
export const ScreeningIdentification = z
  .object({
    records_identified: z.number().int().min(0).max(100_000_000),
    duplicates_removed: z.number().int().min(0).max(100_000_000),
  })
  .refine((c) => c.duplicates_removed <= c.records_identified, { message: "duplicates_removed cannot exceed records_identified", path: ["duplicates_removed"] });
export type ScreeningIdentification = z.infer<typeof ScreeningIdentification>;

const createScreeningJobFields = {
  // Configured bounds (papers, criteria, repetitions, work units) are the gateway's (limits.ts).
  papers: PaperList.min(1),
  criteria: z.array(ScreeningCriterion).max(LIMIT_CEILINGS.criteria).nullish().transform((v) => v ?? []),
  questions: z.array(z.string().max(2_000)).max(50).nullish().transform((v) => v ?? []),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.screening),
  repetitions: z.number().int().min(1).max(LIMIT_CEILINGS.repetitions).default(5),
  // A count of include votes: whole, and at most the votes a paper gets (above, every paper is excluded).
  threshold: z.number().int().min(0).default(1.0),
  clusters_type: z.enum(["include", "exclude"]).nullish(),
  project_id: z.number().int().nullish(),
  mock: z.boolean().default(false),
  max_estimated_cost_usd: z.number().min(0).nullish(),
  identification: ScreeningIdentification.nullish(),
};

function thresholdWithinVotes(request: { repetitions: number; threshold: number }, ctx: z.RefinementCtx): void {
  if (request.threshold <= request.repetitions) return;
  ctx.addIssue({
    code: "custom",
    path: ["threshold"],
    message: `threshold counts include votes: a whole number between 0 and repetitions (${request.repetitions}), got ${request.threshold}`,
  });
}

export const CreateScreeningJobRequest = z.object(createScreeningJobFields).superRefine(thresholdWithinVotes);
export type CreateScreeningJobRequest = z.infer<typeof CreateScreeningJobRequest>;

/**
 * The creation as the screening service takes it over NATS: the same request, except that `papers`
 * is empty when the gateway already stored them as the job's input list (header
 * `x-litrev-staged-input`), so a large body is parsed once, at the gateway.
 */
export const CreateScreeningJobMessage = z.object({ ...createScreeningJobFields, papers: PaperList }).superRefine(thresholdWithinVotes);

export const CreateScreeningJobResponse = z.object({
  job_id: z.string(),
  status: z.literal("pending"),
  progress: z.number(),
  stage: z.string(),
});
export type CreateScreeningJobResponse = z.infer<typeof CreateScreeningJobResponse>;

export const ScreeningStage = z.enum(["labelling", "reasoning", "clustering", "assignment"]);
export type ScreeningStage = z.infer<typeof ScreeningStage>;

export const ScreeningDecision = z.enum(["include", "exclude"]);

/** One criterion's outcome for a paper: the majority verdict and how many votes gave each. */
export const CriterionVerdict = z.looseObject({
  name: z.string(),
  type: z.string(),
  /** The most frequent verdict; ties go to `unclear`, then `met`. */
  verdict: z.enum(["met", "not_met", "unclear"]),
  met: z.number().int(),
  not_met: z.number().int(),
  unclear: z.number().int(),
});

/** A paper's result: the spec's four fields, then what the pipeline adds (one vote per repetition). */
export const ScreeningResultItem = z.looseObject({
  id: PaperId,
  final_score: z.number().nullable(),
  cluster_id: z.number().int(),
  reasoning: z.string(),
  /** `include` when `final_score` (the include votes) reaches the job's threshold. */
  decision: ScreeningDecision,
  votes: z.array(ScreeningDecision),
  /** In the order of the job's criteria. */
  criteria_verdicts: z.array(CriterionVerdict),
});
export type ScreeningResultItem = z.infer<typeof ScreeningResultItem>;

export const ScreeningCluster = z.looseObject({
  cluster_id: z.number().int(),
  label: z.string(),
  count: z.number().int(),
});
export type ScreeningCluster = z.infer<typeof ScreeningCluster>;

/** How the provider bills a paper's votes: one request with `n` choices, or one request per vote. */
export const ProviderN = z.enum(["honoured", "ignored"]);
export type ProviderN = z.infer<typeof ProviderN>;

/**
 * Added (issue 30), beside the spec's `estimated_cost_usd` (always the spec's formula): the
 * service's own forecast of the bill, for the provider's handling of `n` as the service knows it.
 */
const forecastFields = {
  forecast_cost_usd: z.number().nullable().optional().describe("The service's forecast of the bill (not the spec's formula; null for a mock job)"),
  forecast_provider_n: ProviderN.nullable().optional().describe("The provider's handling of `n` the forecast assumes"),
};

export const ScreeningJob = z.object({
  job_id: z.string(),
  status: JobStatus,
  progress: z.number(),
  stage: z.string(),
  results: z.array(ScreeningResultItem).nullable(),
  clusters: z.array(ScreeningCluster).nullable(),
  error: z.string().nullable(),
  ...jobErrorShape,
  error_retryable: z.boolean().nullable(),
  model_version: z.string(),
  config: JsonObject,
  stage_timings: z.record(z.string(), z.number().nullable()),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
  /** What a review reports about the model behind the job (null for jobs recorded before provenance existed). */
  provenance: Provenance.nullable(),
  /** Tokens, calls and retries spent so far; kept after the job ends. */
  usage: JobUsage,
  /** The cost of the tokens the provider reported, at the model's price (null: no price, or a mock job). */
  actual_cost_usd: z.number().nullable(),
  ...forecastFields,
});
export type ScreeningJob = z.infer<typeof ScreeningJob>;

export const ScreeningJobListItem = z.object({
  job_id: z.string(),
  status: JobStatus,
  progress: z.number(),
  stage: z.string(),
  papers_count: z.number().int(),
  model: z.string(),
  project_id: z.number().int().nullable(),
  project_name: z.null(),
  /** Added (issue 19): whether the job ran in mock mode, and the failed job's error, so a listing tells them apart. */
  mock: z.boolean(),
  error: z.string().nullable(),
  duration_ms: z.number().int().nullable(),
  estimated_cost_usd: z.number().nullable(),
  /** The cost of the tokens the provider reported so far (null: no price, or a mock job). */
  actual_cost_usd: z.number().nullable(),
  ...forecastFields,
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
});
export type ScreeningJobListItem = z.infer<typeof ScreeningJobListItem>;

export const ScreeningEstimateRequest = z.object({
  papers_count: z.number().int().min(0).max(10_000_000),
  model: z.string().min(1).max(200).default(DEFAULT_MODEL.screening),
  repetitions: z.number().int().min(1).max(LIMIT_CEILINGS.repetitions).default(5),
  criteria_count: z.number().int().min(0).max(10_000).default(0),
});
export type ScreeningEstimateRequest = z.infer<typeof ScreeningEstimateRequest>;

export const ScreeningEstimateResponse = z.object({
  estimated_input_tokens: z.number().int(),
  estimated_output_tokens: z.number().int(),
  estimated_cost_usd: z.number(),
  model: z.string(),
  papers_count: z.number().int(),
  repetitions: z.number().int(),
  confidence: EstimateConfidence,
  disclaimer: z.string(),
  forecast_input_tokens: z.number().int().optional(),
  forecast_output_tokens: z.number().int().optional(),
  ...forecastFields,
});
export type ScreeningEstimateResponse = z.infer<typeof ScreeningEstimateResponse>;

/** The spec's estimate formula, in tokens. */
export function screeningEstimateTokens(papers: number, repetitions: number, criteria: number) {
  const scoringInput = (200 + 30 * criteria) * papers * repetitions;
  const scoringOutput = 10 * papers * repetitions;
  const reasoningInput = 300 * papers;
  const reasoningOutput = 100 * papers;
  return { input: scoringInput + reasoningInput, output: scoringOutput + reasoningOutput };
}

/** What a screening job's pipeline reads (stored as the job's input object, never inline in a message). */
export interface ScreeningJobInput {
  papers: ScreeningPaper[];
  criteria: ScreeningCriterion[];
  questions: string[];
}

/** The small parameters carried in a screening job command. */
export const ScreeningJobParams = z.object({
  model: z.string(),
  repetitions: z.number().int().min(1),
  threshold: z.number(),
  clusters_type: ClustersType.nullable(),
  mock: z.boolean(),
  /** What the alias pointed to at admission: every call of the job goes to this model (absent: jobs queued before pinning). */
  model_resolved: z.string().optional(),
  /** Whether the model had a price at admission (no price: no actual cost is reported). */
  priced: z.boolean().optional(),
});
export type ScreeningJobParams = z.infer<typeof ScreeningJobParams>;

/** Live or stored fields a screening job view is built from (a `LiveJobState` or a stored job). */
export interface ScreeningJobRecord {
  job_id: string;
  status: z.infer<typeof JobStatus>;
  progress: number;
  stage: string;
  error: string | null;
  error_category: string | null;
  error_retryable: boolean | null;
  model_version: string;
  config: Record<string, unknown>;
  stage_timings: Record<string, number | null>;
  duration_ms: number | null;
  estimated_cost_usd: number | null;
  created_at: string;
  completed_at: string | null;
  project_id: number | null;
  /** Live extras: provenance, usage and actual cost (see `jobReportFields`). */
  extra?: Record<string, unknown> | undefined;
}

/** The spec's poll shape. `results` and `clusters` are null unless the job completed. */
export function toScreeningJob(
  record: ScreeningJobRecord,
  outcome?: { results: unknown[]; clusters: unknown[] } | null,
): ScreeningJob {
  const completed = record.status === "completed" && outcome;
  return {
    job_id: record.job_id,
    status: record.status,
    progress: record.progress,
    stage: record.stage,
    results: completed ? (outcome.results as ScreeningResultItem[]) : null,
    clusters: completed ? (outcome.clusters as ScreeningCluster[]) : null,
    error: record.error,
    ...specErrorFields(record.error_category),
    error_retryable: record.error_retryable,
    model_version: record.model_version,
    config: record.config,
    stage_timings: record.stage_timings,
    duration_ms: record.duration_ms,
    estimated_cost_usd: record.estimated_cost_usd,
    created_at: record.created_at,
    completed_at: record.completed_at,
    ...pollReportFields(record.extra, record.status),
    ...screeningForecast(record.extra),
  };
}

/** The forecast admission recorded in the job's extras (null for a mock job or one admitted before forecasts). */
export function screeningForecast(extra: Record<string, unknown> | undefined): { forecast_cost_usd: number | null; forecast_provider_n: ProviderN | null } {
  const cost = extra?.forecast_cost_usd;
  const n = ProviderN.safeParse(extra?.forecast_provider_n);
  return { forecast_cost_usd: typeof cost === "number" && Number.isFinite(cost) ? cost : null, forecast_provider_n: n.success ? n.data : null };
}

/** The spec's listing shape: papers_count and model come from the recorded config (0 / "" if absent). */
export function toScreeningJobListItem(record: ScreeningJobRecord): ScreeningJobListItem {
  const papers = record.config.papers_count;
  const model = record.config.model;
  return {
    job_id: record.job_id,
    status: record.status,
    progress: record.progress,
    stage: record.stage,
    papers_count: typeof papers === "number" && Number.isInteger(papers) ? papers : 0,
    model: typeof model === "string" ? model : "",
    project_id: record.project_id,
    project_name: null,
    mock: record.config.mock === true,
    error: record.error,
    duration_ms: record.duration_ms,
    estimated_cost_usd: record.estimated_cost_usd,
    actual_cost_usd: jobReportFields(record.extra).actual_cost_usd,
    ...screeningForecast(record.extra),
    created_at: record.created_at,
    completed_at: record.completed_at,
  };
}
