import { z } from "zod";
import { CsvMode, JobStatus, Timestamp } from "./common";
import { IndexerField } from "./indexer-fields";
import { AskedCriterion, JobUsage, Provenance } from "./provenance";
import { ReportCertificate, SAMPLE_MARK_FIELDS, SampleId } from "./screening-validation";

/**
 * Exports and methods reports of finished jobs (`/jobs/{id}/export`, `/jobs/{id}/report`): what a
 * review team downloads, pastes into its methods section, and cites (docs/reporting.md).
 */

export const ExportFormat = z.enum(["csv", "jsonl", "ris"]);
export type ExportFormat = z.infer<typeof ExportFormat>;


export const ExportQuery = z.object({
  format: ExportFormat.default("csv").describe(
    "csv: RFC 4180, UTF-8, a header row, one row per paper or record; jsonl: one JSON object per line; ris: one RIS record per paper or record, its outcome in KW and N1 tags (docs/reporting.md)",
  ),
  csv: CsvMode.default("spreadsheet").describe(
    "spreadsheet (default): a UTF-8 byte-order mark, and text cells that a spreadsheet would run as a formula get a leading apostrophe (never the id column or numbers); plain: values as they are, no byte-order mark (for R or Python)",
  ),
});

/** A screening job's export: it can also mark the papers of one of the job's validation samples. */
export const ScreeningExportQuery = ExportQuery.extend({
  sample: SampleId.optional().describe(
    `A validation sample of this job (its sample_id): every paper gets ${SAMPLE_MARK_FIELDS.sampled} (true/false) and ${SAMPLE_MARK_FIELDS.label} (include/exclude; empty in CSV, null in JSON Lines, when not labelled) as the last CSV columns and JSON Lines fields, and a sampled paper gets KW and N1 tags in RIS (docs/reporting.md). Another client's or an unknown sample: 404`,
  ),
});

export const ReportFormat = z.enum(["markdown", "json"]);
export const ReportQuery = z.object({
  format: ReportFormat.default("markdown").describe("markdown (default): text to paste into a methods section; json: the same facts as fields"),
});

/**
 * The answer of a kind's `write-artifact` operation: the finished job's artifact is in the job data
 * store (written just now from the store of record, for a job that ended without one: finished
 * before artifacts existed, failed as an orphan, or whose artifact outlived its max age).
 */
export const ArtifactWritten = z.object({ written: z.boolean() });
export type ArtifactWritten = z.infer<typeof ArtifactWritten>;

/** The owning service's answer to a job's deletion (the gateway answers the client 204 without a body). */
export const JobDeleted = z.object({ deleted: z.literal(true) });
export type JobDeleted = z.infer<typeof JobDeleted>;

/** Counts of the job's per-item outcomes, read from its stored results. */
export const ReportOutcomes = z.object({
  /** Papers (screening) or records (indexer) in the stored results. */
  items: z.number().int().nonnegative(),
  /** Screening: papers by decision (`include`, `exclude`); indexer: records by `indexing_status`. */
  by_outcome: z.record(z.string(), z.number().int().nonnegative()),
  /** Items that carry an `error` (screening papers the model lost; indexer records whose extraction failed). */
  errors: z.number().int().nonnegative(),
});

export const ReportPrompt = z.object({
  name: z.string(),
  template_id: z.string(),
  sha256: z.string(),
  /** The prompt's built-in instructions as this service version ships them; null when unknown. */
  instructions: z.string().nullable(),
  /** The whole text as sent (no paper data): its SHA-256 is `sha256`. Absent for jobs recorded before it was kept. */
  text: z.string().optional(),
});

/** What the job was asked, from its provenance (null: not recorded, or not this kind's). */
export const ReportAsked = z.object({
  criteria: z.array(AskedCriterion).nullable(),
  questions: z.array(z.string()).nullable(),
  fields: z.array(IndexerField).nullable(),
  /** Present when the texts above were cut to fit the job's record (`Provenance.asked_cut_to_chars`): each at most this many characters; the job ran on them whole. */
  texts_cut_to_chars: z.number().int().positive().optional(),
});

/** The counts a PRISMA flow diagram needs for the step the job did. */
export const PrismaCounts = z.object({
  /** Papers or records the job was given. */
  records_in: z.number().int().nonnegative(),
  /** Screening jobs created from an import that counted them (`identification` on creation): records read, duplicates removed before screening. */
  records_identified: z.number().int().nonnegative().optional(),
  duplicates_removed: z.number().int().nonnegative().optional(),
  /** Items with a result (fewer than `records_in` when the job failed or was cancelled). */
  results: z.number().int().nonnegative(),
  /** Screening: papers included and excluded (errored papers are included, for a reviewer); null for the indexer. */
  included: z.number().int().nonnegative().nullable(),
  excluded: z.number().int().nonnegative().nullable(),
  /** Items that got no usable answer from the model. */
  errored: z.number().int().nonnegative(),
  /** Items whose input had no abstract; null when the job did not keep its texts. */
  without_abstract: z.number().int().nonnegative().nullable(),
  /** Excluded papers by the criterion they fell on (a paper may fall on several; one that fell on none is "no single criterion"). */
  exclusion_reasons: z.record(z.string(), z.number().int().nonnegative()),
});
export type PrismaCounts = z.infer<typeof PrismaCounts>;

/** One row of the reporting checklist: the guideline's item, and the job's answer or null ("for you to fill in"). */
export const ChecklistRow = z.object({
  guidelines: z.array(z.enum(["RAISE", "PRISMA-trAIce"])),
  item: z.string(),
  answer: z.string().nullable(),
});
export type ChecklistRow = z.infer<typeof ChecklistRow>;

/**
 * A job's methods report as fields. Fields a job did not record (jobs from before provenance was
 * kept) are null; the Markdown form says "not recorded" for them.
 */
export const JobReport = z.object({
  /** A heading naming the task (not the job id). Absent in reports written before it existed. */
  title: z.string().optional(),
  job_id: z.string(),
  /** The job kind (its service). */
  kind: z.string(),
  task: z.string(),
  status: JobStatus,
  tool: z.object({ name: z.string(), version: z.string().nullable(), commit: z.string().nullable() }),
  model: z.object({
    requested: z.string(),
    resolved: z.string().nullable(),
    /** Model strings the provider reported, with call counts; null when not recorded. */
    reported: z.array(z.object({ model: z.string(), calls: z.number().int() })).nullable(),
    provider: z.object({ host: z.string().nullable(), profile: z.string() }).nullable(),
  }),
  mock: z.boolean(),
  parameters: Provenance.shape.parameters.nullable(),
  repetitions: z.number().int().nullable(),
  threshold: z.number().nullable(),
  decision_rule: z.string().nullable(),
  prompts: z.array(ReportPrompt).nullable(),
  outcomes: ReportOutcomes,
  usage: JobUsage.nullable(),
  estimated_cost_usd: z.number().nullable(),
  actual_cost_usd: z.number().nullable(),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
  duration_ms: z.number().int().nullable(),
  error: z.string().nullable(),
  limitations: z.array(z.string()),
  /** Screening: the latest recall certificate of the job's validation samples (the service adds it). */
  recall_certificate: ReportCertificate.nullable().optional(),
  asked: ReportAsked.optional(),
  prisma: PrismaCounts.optional(),
  /** A methods paragraph written from the job, with placeholders in {braces} for what only the team knows. Added when the report is read. */
  methods_paragraph: z.string().optional(),
  /** RAISE and PRISMA-trAIce reporting items, answered where the job knows. Added when the report is read. */
  checklist: z.array(ChecklistRow).optional(),
});
export type JobReport = z.infer<typeof JobReport>;
