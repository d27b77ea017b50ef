import { z } from "zod";
import { JobStatus, Timestamp } from "./common";
import { JobUsage, Provenance } from "./provenance";
import { ReportCertificate } from "./screening-validation";

/**
 * Exports and methods reports of finished jobs (`/jobs/{id}/export`, `/jobs/{id}/report`): what a
 * review team downloads, pastes into its methods section, and cites (docs/reporting.md).
 */

export const ExportFormat = z.enum(["csv", "jsonl", "ris"]);
export type ExportFormat = z.infer<typeof ExportFormat>;

export const CsvMode = z.enum(["spreadsheet", "plain"]);
export type CsvMode = z.infer<typeof CsvMode>;

export const ExportQuery = z.object({
  format: ExportFormat.default("csv").describe(
    "csv: RFC 4180, UTF-8, a header row, one row per paper or record; jsonl: one JSON object per line; ris: one RIS record per paper or record, its outcome in KW and N1 tags (docs/reporting.md)",
  ),
  csv: CsvMode.default("spreadsheet").describe(
    "spreadsheet (default): a UTF-8 byte-order mark, and text cells that a spreadsheet would run as a formula get a leading apostrophe (never the id column or numbers); plain: values as they are, no byte-order mark (for R or Python)",
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
});

/**
 * A job's methods report as fields. Fields a job did not record (jobs from before provenance was
 * kept) are null; the Markdown form says "not recorded" for them.
 */
export const JobReport = z.object({
  job_id: z.string(),
  kind: z.enum(["screening", "indexer"]),
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
});
export type JobReport = z.infer<typeof JobReport>;
