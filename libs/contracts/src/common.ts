import { z } from "zod";
import { LIMIT_CEILINGS } from "./ceilings";

/** Free-form JSON object: the spec leaves these dicts' inner structure open. */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** ISO 8601 UTC timestamp string. */
export const Timestamp = z.string();

export const JobStatus = z.enum(["pending", "running", "completed", "failed"]);
export type JobStatus = z.infer<typeof JobStatus>;
export const isTerminalStatus = (status: JobStatus) => status === "completed" || status === "failed";

export const ProjectContext = z.object({
  description: z.string().max(20_000).default(""),
  research_questions: z.array(z.string().max(2_000)).max(50).default([]),
});
export type ProjectContext = z.infer<typeof ProjectContext>;

/** Query of both job listings. */
export const ListJobsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(LIMIT_CEILINGS.listLimit).default(50),
});
export type ListJobsQuery = z.infer<typeof ListJobsQuery>;

/**
 * An integer in a query string. `z.coerce.number()` alone would read `?project_id=` (an empty
 * string) as 0; here anything but an optional sign and digits is refused.
 */
const queryInteger = z.preprocess((v) => (typeof v === "string" && !/^\s*[+-]?\d+\s*$/.test(v) ? Number.NaN : v), z.coerce.number().int());

export const ActiveJobQuery = z.object({
  project_id: queryInteger,
});
export type ActiveJobQuery = z.infer<typeof ActiveJobQuery>;

export const JobIdParams = z.object({ job_id: z.string().min(1).max(100) });
export type JobIdParams = z.infer<typeof JobIdParams>;

/** Job ids are UUIDs (the spec); anything else names no job, and is answered 404 without a lookup. */
export function isJobId(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

/** Token usage and cost, as the indexer reports it. */
export const Usage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
  cached_input_tokens: z.number().int().nonnegative().optional(),
  estimated_cost_usd: z.number(),
});
export type Usage = z.infer<typeof Usage>;

export const EstimateConfidence = z.literal("approximate");
export const ESTIMATE_DISCLAIMER =
  "Approximate estimate: actual token usage and cost typically vary by about ±30% from this figure.";

/** Duplicates named in a refusal at most: a list of thousands of repeats needs only its first few. */
const DUPLICATES_NAMED = 10;

/**
 * Refuses a list whose items share an id, naming the repeated ids: a result row, an export line
 * or a validation label must each mean one item. Ids compare as text (`7` and `"7"` are one row of a CSV).
 */
export function uniqueIds<T>(idOf: (item: T) => string | number, what: string) {
  return (items: readonly T[], ctx: z.RefinementCtx): void => {
    const seen = new Set<string>();
    const repeated = new Set<string>();
    for (const item of items) {
      const id = String(idOf(item));
      if (seen.has(id)) repeated.add(id);
      else seen.add(id);
    }
    if (repeated.size === 0) return;
    const named = [...repeated].slice(0, DUPLICATES_NAMED).map((id) => `'${id}'`);
    const more = repeated.size > DUPLICATES_NAMED ? ` and ${repeated.size - DUPLICATES_NAMED} more` : "";
    ctx.addIssue({ code: "custom", message: `duplicate ${what}: ${named.join(", ")}${more}; each must be unique` });
  };
}

/** How a CSV download is written: `spreadsheet` (a byte-order mark, the formula guard) or `plain` (values as they are, for scripts). */
export const CsvMode = z.enum(["spreadsheet", "plain"]);
export type CsvMode = z.infer<typeof CsvMode>;
