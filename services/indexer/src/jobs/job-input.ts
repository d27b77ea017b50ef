import { z } from "zod";
import { IndexerField, IndexerRecord, LlmUsage, ProjectContext, type JobUsage, type Provenance } from "@litrev/contracts";
import type { OutputRecord, QuoteStats, RecordOutcome } from "../pipeline/extract-record";

/** What a job's input object holds: the records (already cut by `mode`) and how to extract them. */
export const IndexerJobInput = z.object({
  records: z.array(IndexerRecord),
  fields: z.array(IndexerField),
  model: z.string(),
  project_context: ProjectContext.nullish(),
  /** A mock job: canned values, no provider call (absent: jobs admitted before indexer jobs had mock mode). */
  mock: z.boolean().optional(),
});
export type IndexerJobInput = z.infer<typeof IndexerJobInput>;

/** The checkpoint stage; one unit per record index, saved the moment the record is done. */
export const EXTRACTION_STAGE = "extraction";

/** `usage` as checkpoints written before it had one shape kept it: camelCase, the reply count and model beside it. */
const EarlierUsage = z.object({ inputTokens: z.number(), cachedInputTokens: z.number(), outputTokens: z.number(), costUsd: z.number() });

/**
 * One finished record as checkpointed: its outcome. Parsed on restore, so that a redelivered job
 * checkpointed by an earlier version counts its usage too; a value that does not parse is run again.
 */
export const RecordCheckpoint = z
  .object({
    record: z.custom<OutputRecord>((value) => typeof value === "object" && value !== null && !Array.isArray(value)),
    error: z.string().optional(),
    usage: z.union([LlmUsage, EarlierUsage]),
    quotes: z.object({ claimed: z.number(), verified: z.number(), dropped: z.number() }),
    // Earlier checkpoints only (absent in those written before calls were counted).
    modelVersion: z.string().optional(),
    requests: z.number().int().nonnegative().optional(),
    retries: z.number().int().nonnegative().optional(),
  })
  .transform(({ record, error, usage, quotes, modelVersion, requests, retries }): RecordOutcome => {
    if ("calls" in usage) return { record, ...(error ? { error } : {}), usage, quotes };
    // One reply if the provider answered it.
    const calls = requests ?? (modelVersion ? 1 : 0);
    const { inputTokens, cachedInputTokens, outputTokens, costUsd } = usage;
    const models = modelVersion && calls > 0 ? { [modelVersion]: calls } : {};
    const current = { calls, input_tokens: inputTokens, cached_input_tokens: cachedInputTokens, output_tokens: outputTokens, cost_usd: costUsd, retries: retries ?? 0, models };
    return { record, ...(error ? { error } : {}), usage: current, quotes };
  });

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
