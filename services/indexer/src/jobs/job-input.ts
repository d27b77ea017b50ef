import { z } from "zod";
import { IndexerField, IndexerRecord, ProjectContext, type JobUsage, type Provenance } from "@litrev/contracts";
import type { LlmUsage } from "@litrev/llm";
import type { OutputRecord, QuoteStats } from "../pipeline/extract-record";

/** What a job's input object holds: the records (already cut by `mode`) and how to extract them. */
export const IndexerJobInput = z.object({
  records: z.array(IndexerRecord),
  fields: z.array(IndexerField),
  model: z.string(),
  project_context: ProjectContext.nullish(),
});
export type IndexerJobInput = z.infer<typeof IndexerJobInput>;

/** The checkpoint stage; one unit per record index, saved the moment the record is done. */
export const EXTRACTION_STAGE = "extraction";

/** One finished record as checkpointed (and as kept in a failed job's partial result). */
export interface RecordCheckpoint {
  record: OutputRecord;
  error?: string | undefined;
  usage: LlmUsage;
  modelVersion?: string | undefined;
  /** Provider replies and retried attempts for the record (absent in checkpoints written before they were counted). */
  requests?: number | undefined;
  retries?: number | undefined;
  quotes: QuoteStats;
}

/** The small parameters of an indexer job's command (all optional: jobs queued by an earlier version lack them). */
export const IndexerJobParams = z.object({
  /** What the alias pointed to at admission: every call of the job goes to this model. */
  model_resolved: z.string().optional(),
  /** Whether the model had a price at admission (no price: no actual cost is reported). */
  priced: z.boolean().optional(),
});
export type IndexerJobParams = z.infer<typeof IndexerJobParams>;

/** Live extras written with progress: usage to date and what the poll shows. */
export interface IndexerLiveExtra {
  usage?: JobUsage;
  /** The cost of the tokens the provider reported so far (null: the model has no price). */
  actual_cost_usd?: number | null;
  provenance?: Provenance;
  records_done?: number;
  record_count?: number;
  model_version?: string;
  quotes?: QuoteStats;
}
