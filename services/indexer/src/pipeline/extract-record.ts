import type { Evidence, IndexerRecord, LlmUsage } from "@litrev/contracts";
import { ServiceError } from "@litrev/contracts";
import { isAbortError, isModelUnavailable, ZERO_USAGE, type LlmClient, type ReasoningEffort } from "@litrev/llm";
import { CONFIDENCE, coerceValue, type FieldValue, type ValueFlag } from "./coerce";
import { EvidenceLocator } from "./evidence";
import type { FieldSpec } from "./field-spec";
import { extractionUserMessage } from "./prompt";
import type { FieldReply, ReplySchema } from "./reply-schema";

/** The provider call the pipeline needs; LlmClient in production, anything shaped like it in tests. */
export type StructuredCaller = Pick<LlmClient, "structured">;

/** Everything fixed for all records of one request. */
export interface ExtractionPlan {
  model: string;
  /** The provider model a job was pinned to at admission (the live alias table is then not consulted). */
  resolvedModel?: string | undefined;
  specs: FieldSpec[];
  schema: ReplySchema;
  system: string;
  /** The shared head of every user message (fields, project context). */
  prefix: string;
  temperature?: number | undefined;
  maxOutputTokens?: number | undefined;
  reasoningEffort?: ReasoningEffort | undefined;
  providerKey?: string | undefined;
  /** A job's records: the provider's rate limit slows them down, never fails them (a synchronous run answers 429). */
  background?: boolean | undefined;
}

/**
 * Record outcomes (`indexing_status`, docs/indexer.md): `ok`; `no_abstract` when there is no
 * abstract to extract from (values null, no provider call); `error` when the provider call for
 * this record failed in a way that does not affect other records (values null, reason in `errors`);
 * `not_processed` when a synchronous run spent its time budget before reaching the record.
 */
type IndexingStatus = "ok" | "no_abstract" | "error" | "not_processed";

export interface ExtractedField {
  value: FieldValue;
  confidence: number;
  evidence: Evidence[];
  flags: ValueFlag[];
}

export interface OutputRecord {
  ID: string | number;
  indexing_status: IndexingStatus;
  [field: string]: ExtractedField | string | number;
}

export interface QuoteStats {
  claimed: number;
  verified: number;
  dropped: number;
}

export const NO_QUOTES: Readonly<QuoteStats> = Object.freeze({ claimed: 0, verified: 0, dropped: 0 });

export function addQuotes(a: QuoteStats, b: QuoteStats): QuoteStats {
  return { claimed: a.claimed + b.claimed, verified: a.verified + b.verified, dropped: a.dropped + b.dropped };
}

/** One record done: its output, and what its call used (the model that answered is in `usage.models`). */
export interface RecordOutcome {
  record: OutputRecord;
  /** The per-record message for the response's `errors`, when there is one. */
  error?: string | undefined;
  usage: LlmUsage;
  quotes: QuoteStats;
}

/**
 * Failures that concern the whole request rather than one record: a bad key, no quota, a rate
 * limit or outage that outlasted the retries. They stop the run (HTTP error, or a failed job).
 */
const FATAL = new Set(["auth", "quota", "rate_limit", "provider_unavailable", "service_unavailable"]);

function isFatal(error: unknown): boolean {
  // A model the provider does not offer fails every record alike: the job stops, naming it.
  return isAbortError(error) || isModelUnavailable(error) || (error instanceof ServiceError && FATAL.has(error.category));
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

function emptyField(): ExtractedField {
  return { value: null, confidence: 0, evidence: [], flags: [] };
}

function recordWith(id: string | number, status: IndexingStatus, specs: readonly FieldSpec[], fields?: ExtractedField[]): OutputRecord {
  const out: OutputRecord = { ID: id, indexing_status: status };
  specs.forEach((spec, i) => (out[spec.field.name] = fields?.[i] ?? emptyField()));
  return out;
}

/** A record a synchronous run had no time left for. */
export function notProcessed(record: IndexerRecord, specs: readonly FieldSpec[], budgetMs: number): RecordOutcome {
  return {
    record: recordWith(record.ID, "not_processed", specs),
    error: `Record ${record.ID}: not processed: the synchronous run used its ${Math.round(budgetMs / 1000)} s time budget; use POST /v1/indexer/jobs for large sets`,
    usage: ZERO_USAGE,
    quotes: NO_QUOTES,
  };
}

/** Extracts one record: at most one provider call (plus the LLM layer's own retries and repairs). */
export async function extractRecord(
  llm: StructuredCaller,
  plan: ExtractionPlan,
  record: IndexerRecord,
  signal?: AbortSignal,
): Promise<RecordOutcome> {
  if (!record.Abstract.trim()) {
    return {
      record: recordWith(record.ID, "no_abstract", plan.specs),
      error: `Record ${record.ID}: no abstract; every field is null`,
      usage: ZERO_USAGE,
      quotes: NO_QUOTES,
    };
  }
  let reply;
  try {
    reply = await llm.structured({
      model: plan.model,
      resolvedModel: plan.resolvedModel,
      schema: plan.schema,
      schemaName: "indexer_extraction",
      system: plan.system,
      user: extractionUserMessage(plan.prefix, { title: record.Title, abstract: record.Abstract }),
      temperature: plan.temperature,
      maxOutputTokens: plan.maxOutputTokens,
      reasoningEffort: plan.reasoningEffort,
      providerKey: plan.providerKey,
      background: plan.background,
      signal,
    });
  } catch (error) {
    if (isFatal(error)) throw error;
    const message = ServiceError.from(error).message;
    return {
      record: recordWith(record.ID, "error", plan.specs),
      error: `Record ${record.ID}: ${message}`,
      usage: ZERO_USAGE,
      quotes: NO_QUOTES,
    };
  }
  const locator = new EvidenceLocator({ title: record.Title, abstract: record.Abstract });
  const quotes: QuoteStats = { claimed: 0, verified: 0, dropped: 0 };
  const data = reply.data as Record<string, FieldReply | undefined>;
  const fields = plan.specs.map((spec) => checkField(spec, data[spec.key], locator, quotes));
  return {
    record: recordWith(record.ID, "ok", plan.specs, fields),
    usage: reply.usage,
    quotes,
  };
}

/** One field of the reply, typed, its quotes verified and its confidence adjusted (docs/indexer.md). */
export function checkField(spec: FieldSpec, reply: FieldReply | undefined, locator: EvidenceLocator, quotes: QuoteStats): ExtractedField {
  const coerced = coerceValue(spec, reply?.value);
  const claims = Array.isArray(reply?.evidence) ? reply.evidence : [];
  const { evidence, dropped } = locator.verify(claims);
  quotes.claimed += claims.length;
  quotes.dropped += dropped.length;
  quotes.verified += claims.length - dropped.length;

  const flags = [...coerced.flags];
  let confidence = modelConfidence(reply?.confidence) * coerced.factor;
  if (dropped.length > 0) {
    confidence *= CONFIDENCE.quoteDropped;
    flags.push("quote_not_found");
  }
  if (coerced.value !== null && evidence.length === 0) {
    confidence = Math.min(confidence, CONFIDENCE.unverifiedCap);
    flags.push("unverified");
  }
  return { value: coerced.value, confidence: round3(confidence), evidence, flags };
}

/** The model's confidence as a number in [0, 1]; a percentage is read as one, anything else is 0.5. */
function modelConfidence(raw: unknown): number {
  const value = typeof raw === "number" ? raw : typeof raw === "string" ? Number.parseFloat(raw) : Number.NaN;
  if (!Number.isFinite(value)) return 0.5;
  if (value > 1 && value <= 100) return value / 100;
  return Math.min(1, Math.max(0, value));
}
