import { z } from "zod";
import { IndexerField, IndexerRecord, ProjectContext } from "@litrev/contracts";
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
  quotes: QuoteStats;
}

/** Live extras written with progress: usage to date and what the poll shows. */
export interface IndexerLiveExtra {
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number; estimated_cost_usd: number };
  records_done?: number;
  record_count?: number;
  model_version?: string;
  quotes?: QuoteStats;
}
