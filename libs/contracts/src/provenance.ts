import { z } from "zod";
import { isTerminalStatus, Usage, type JobStatus } from "./common";
import { IndexerField } from "./indexer-fields";

/**
 * What a review must report about the model behind a job (RAISE, PRISMA-trAIce): recorded by the
 * service that ran it, pinned at admission where it can be, and returned on every poll.
 */

/** One prompt as sent: its registry name and template, the exact text (no paper data) and its SHA-256. */
export const PromptUse = z.object({
  name: z.string(),
  template_id: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The whole text as sent (the system message, or the field list heading each user message), so the hash can be checked; absent from a pending or running job's poll (`pollReportFields`) and in jobs recorded before it was kept. */
  text: z.string().optional(),
});
export type PromptUse = z.infer<typeof PromptUse>;

/** The sampling settings one stage of a pipeline called the model with (null: the provider's default). */
export const StageParameters = z.object({
  temperature: z.number().nullable(),
  max_output_tokens: z.number().int().nullable(),
  reasoning_effort: z.string().nullable(),
});
export type StageParameters = z.infer<typeof StageParameters>;

/** A model string as the provider reported it in its replies, with how many calls it answered. */
export const ModelUse = z.object({ model: z.string(), calls: z.number().int().nonnegative() });

/** A screening criterion as the job was given it. */
export const AskedCriterion = z.object({ name: z.string(), type: z.enum(["include", "exclude"]), text: z.string() });
export type AskedCriterion = z.infer<typeof AskedCriterion>;

export const Provenance = z.object({
  /** The model as the client gave it (an alias such as `llm-5-nano`, or a provider id). */
  model_requested: z.string(),
  /** What the alias pointed to when the job was admitted; every call of the job goes to this model. */
  model_resolved: z.string(),
  /** Each model string the provider reported, with a call count (empty for mock jobs). */
  models_used: z.array(ModelUse),
  service_version: z.object({ version: z.string(), commit: z.string().nullable() }),
  /** The provider's base URL host and profile; never a key. `{host: null, profile: "mock"}` for mock jobs. */
  provider: z.object({ host: z.string().nullable(), profile: z.string() }),
  /** Sampling settings per pipeline stage (e.g. `labelling`, `reasoning`, `extraction`). */
  parameters: z.record(z.string(), StageParameters),
  repetitions: z.number().int().nullable(),
  threshold: z.number().nullable(),
  /** The decision rule in words, e.g. "include when at least 1 of 5 votes says include". */
  decision_rule: z.string(),
  prompts: z.array(PromptUse),
  /** What the job was asked (absent in jobs recorded before it was kept): screening's criteria and research questions… */
  criteria: z.array(AskedCriterion).optional(),
  questions: z.array(z.string()).optional(),
  /** …and the indexer's field definitions. */
  fields: z.array(IndexerField).optional(),
  /**
   * Set when the asked texts were too large for the job's record (`fitProvenance`): each criterion,
   * question, field description and example is cut to at most this many characters here (ending
   * with "…"); the job itself was run on them whole.
   */
  asked_cut_to_chars: z.number().int().positive().optional(),
});
export type Provenance = z.infer<typeof Provenance>;

/**
 * The most the asked texts take in a job's provenance (characters of JSON). The provenance travels
 * in the job's live state and its stored row, each one NATS message (1 MB at most) beside the rest
 * of the job: the largest criteria or field definitions a request may hold (1.25 MB, 0.66 MB) do
 * not fit there.
 */
export const ASKED_MAX_CHARS = 256 * 1024;

/**
 * The provenance as a job's state and row can carry it: the asked texts whole when they fit in
 * ASKED_MAX_CHARS, else every one of them cut to the same length so that they do, with
 * `asked_cut_to_chars` saying so (never silently shortened).
 */
export function fitProvenance(provenance: Provenance): Provenance {
  const asked = (p: Provenance) => JSON.stringify({ criteria: p.criteria, questions: p.questions, fields: p.fields }).length;
  if (asked(provenance) <= ASKED_MAX_CHARS) return provenance;
  const { criteria, questions, fields } = provenance;
  const texts = (criteria?.length ?? 0) * 2 + (questions?.length ?? 0) + (fields ?? []).reduce((n, f) => n + 1 + (f.examples?.length ?? 0), 0);
  const cutTo = (max: number): Provenance => {
    const cut = (text: string) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
    return {
      ...provenance,
      ...(criteria ? { criteria: criteria.map((c) => ({ ...c, name: cut(c.name), text: cut(c.text) })) } : {}),
      ...(questions ? { questions: questions.map(cut) } : {}),
      ...(fields ? { fields: fields.map((f) => ({ ...f, description: cut(f.description), ...(f.examples ? { examples: f.examples.map(cut) } : {}) })) } : {}),
      asked_cut_to_chars: max,
    };
  };
  // An equal share of the budget each; halved while JSON escapes still make it too long (a few rounds at most).
  let max = Math.max(16, Math.floor(ASKED_MAX_CHARS / Math.max(1, texts)));
  let fitted = cutTo(max);
  while (asked(fitted) > ASKED_MAX_CHARS && max > 16) fitted = cutTo((max = Math.max(16, Math.floor(max / 2))));
  return fitted;
}

const count = z.number().int().nonnegative();

/**
 * What provider calls used, summed as the provider reported it (repairs and retries included: all
 * are billed). The one usage shape from a provider call (libs/llm) through checkpoints, the cost
 * meter and live extras to the report; the wire's `JobUsage` and `Usage` are made from it.
 */
export const LlmUsage = z.object({
  /** Provider replies (repair requests included). */
  calls: count,
  input_tokens: count,
  /** Part of `input_tokens` served from the prompt cache (billed at the cached-input price). */
  cached_input_tokens: count,
  /** Includes reasoning tokens, which are billed as output. */
  output_tokens: count,
  cost_usd: z.number().nonnegative(),
  /** Attempts sent again (absent in checkpoints written before they were counted). */
  retries: count.optional(),
  /** Replies per model string the provider reported (the provenance's `models_used`, in first-seen order). */
  models: z.record(z.string(), count).optional(),
});
export type LlmUsage = z.infer<typeof LlmUsage>;

/** Tokens and calls a job has spent so far (kept in the stored record after it ends). */
export const JobUsage = Usage.partial().extend({
  calls: z.number().int().nonnegative().optional(),
  retries: z.number().int().nonnegative().optional(),
});
export type JobUsage = z.infer<typeof JobUsage>;

/**
 * A job's report fields as its live state or stored row keeps them (under `extra`, written at admission
 * and as the job runs). Read leniently: a job recorded before these fields existed, or with a value this
 * version cannot read, shows `provenance: null`, empty usage and no actual cost rather than failing the poll.
 */
export const JOB_REPORT_EXTRAS = { provenance: "provenance", usage: "usage", actualCost: "actual_cost_usd" } as const;

export interface JobReportFields {
  provenance: Provenance | null;
  usage: JobUsage;
  actual_cost_usd: number | null;
}

export function jobReportFields(extra: Record<string, unknown> | undefined): JobReportFields {
  const provenance = Provenance.safeParse(extra?.[JOB_REPORT_EXTRAS.provenance]);
  const usage = JobUsage.safeParse(extra?.[JOB_REPORT_EXTRAS.usage]);
  const cost = extra?.[JOB_REPORT_EXTRAS.actualCost];
  return {
    provenance: provenance.success ? provenance.data : null,
    usage: usage.success ? usage.data : {},
    actual_cost_usd: typeof cost === "number" && Number.isFinite(cost) ? cost : null,
  };
}

/**
 * The report fields as a poll shows them: a pending or running job's prompts by name and hash only.
 * Clients poll a running job every second or so, and the prompt texts (a few KB that never change
 * during a run) were most of its poll body: with them it grew from 2.2 to 5.8 KB and the gateway
 * answered about a third fewer polls a second. The finished job's poll and its report carry them.
 */
export function pollReportFields(extra: Record<string, unknown> | undefined, status: JobStatus): JobReportFields {
  const fields = jobReportFields(extra);
  if (isTerminalStatus(status) || !fields.provenance) return fields;
  const prompts = fields.provenance.prompts.map(({ text: _text, ...prompt }) => prompt);
  return { ...fields, provenance: { ...fields.provenance, prompts } };
}
