import { jobKind, JobUsage, Provenance, ScreeningIdentification, type ItemText, type JobReport, type JobService, type PrismaCounts } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { certificateResult, lookText, NOT_SENT } from "./methods-text";
import { resultOf, type JobRecord } from "./views";

/** What a service knows about its prompts beyond a job's record: the built-in text of each, by name. */
export type PromptInstructions = (name: string) => string | undefined;

/** A field the poll view carries once the job recorded it (null otherwise), checked against its contract. */
function recorded<T>(view: JsonRecord, field: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }): T | null {
  const parsed = schema.safeParse(view[field]);
  return view[field] !== undefined && view[field] !== null && parsed.success ? parsed.data : null;
}

/** An excluded paper that fell on no single criterion (its votes excluded it overall). */
export const NO_SINGLE_CRITERION = "no single criterion";

/** Per-item outcomes, counted as the items go by, chunk by chunk (with their texts, when the job keeps them). */
export class OutcomeCounter {
  readonly #byOutcome: Record<string, number> = {};
  readonly #reasons: Record<string, number> = {};
  #items = 0;
  #errors = 0;
  #withoutAbstract: number | null = null;
  readonly #kind;

  constructor(service: JobService) {
    this.#kind = jobKind(service).report;
  }

  add(items: readonly JsonRecord[], texts?: readonly ItemText[]): void {
    const { outcomeField, failedOutcome } = this.#kind;
    for (const item of items) {
      this.#items++;
      const outcome = typeof item[outcomeField] === "string" ? (item[outcomeField] as string) : "unknown";
      this.#byOutcome[outcome] = (this.#byOutcome[outcome] ?? 0) + 1;
      if ((typeof item.error === "string" && item.error) || outcome === failedOutcome) this.#errors++;
      if (outcome === "exclude") {
        const reasons = this.#kind.exclusionReasons(item);
        for (const reason of reasons.length > 0 ? new Set(reasons) : [NO_SINGLE_CRITERION]) this.#reasons[reason] = (this.#reasons[reason] ?? 0) + 1;
      }
    }
    if (texts) this.#withoutAbstract = (this.#withoutAbstract ?? 0) + texts.filter((t) => !t.abstract.trim()).length;
  }

  get outcomes(): JobReport["outcomes"] {
    return { items: this.#items, by_outcome: { ...this.#byOutcome }, errors: this.#errors };
  }

  /** What the PRISMA counts take from the items beyond `outcomes`. */
  get flow(): Pick<PrismaCounts, "without_abstract" | "exclusion_reasons"> {
    return { without_abstract: this.#items === 0 ? 0 : this.#withoutAbstract, exclusion_reasons: { ...this.#reasons } };
  }
}

/**
 * A finished job's methods report: what its record says (provenance, usage, cost, dates), what its
 * results count, and the known limits of the method. Built once, by the worker that ends the job,
 * into the job's artifact.
 */
export function buildReport(service: JobService, record: JobRecord, counted: OutcomeCounter, prompts: PromptInstructions = () => undefined): JobReport {
  const kind = jobKind(service);
  const outcomes = counted.outcomes;
  const view = kind.view(record, { items: [], result: resultOf(record) }, []) as JsonRecord;
  const provenance = recorded(view, "provenance", Provenance);
  const usage = recorded(view, "usage", JobUsage);
  const actual = typeof view.actual_cost_usd === "number" ? view.actual_cost_usd : null;
  const config = record.config;
  const number = (value: unknown) => (typeof value === "number" ? value : null);
  return {
    job_id: record.job_id,
    kind: service,
    task: kind.report.task,
    status: record.status,
    tool: { name: "litrev literature-review AI service", version: provenance?.service_version.version ?? null, commit: provenance?.service_version.commit ?? null },
    model: {
      requested: provenance?.model_requested ?? (typeof config.model === "string" ? config.model : record.model_version),
      resolved: provenance?.model_resolved ?? null,
      reported: provenance?.models_used ?? null,
      provider: provenance?.provider ?? null,
    },
    mock: config.mock === true,
    parameters: provenance?.parameters ?? null,
    repetitions: provenance?.repetitions ?? number(config.repetitions),
    threshold: provenance?.threshold ?? number(config.threshold),
    decision_rule: provenance?.decision_rule ?? null,
    prompts: provenance ? provenance.prompts.map((p) => ({ ...p, instructions: prompts(p.name) ?? null })) : null,
    outcomes,
    title: kind.report.title(Number(record.config[kind.report.countField] ?? 0), record.config, provenance),
    asked: {
      criteria: provenance?.criteria ?? null,
      questions: provenance?.questions ?? null,
      fields: provenance?.fields ?? null,
      ...(provenance?.asked_cut_to_chars ? { texts_cut_to_chars: provenance.asked_cut_to_chars } : {}),
    },
    prisma: prismaCounts(service, record, counted),
    usage,
    estimated_cost_usd: record.estimated_cost_usd,
    actual_cost_usd: actual,
    created_at: record.created_at,
    completed_at: record.completed_at,
    duration_ms: record.duration_ms,
    error: record.error,
    limitations: kind.report.limitations,
  };
}

function prismaCounts(service: JobService, record: JobRecord, counted: OutcomeCounter): PrismaCounts {
  const { items, by_outcome: by, errors } = counted.outcomes;
  const given = record.config[jobKind(service).report.countField];
  const votes = jobKind(service).report.votes;
  const identification = ScreeningIdentification.safeParse(record.config.identification);
  return {
    ...(identification.success ? identification.data : {}),
    records_in: typeof given === "number" && Number.isInteger(given) ? given : items,
    results: items,
    included: votes ? (by.include ?? 0) : null,
    excluded: votes ? (by.exclude ?? 0) : null,
    errored: errors,
    ...counted.flow,
  };
}

const NOT_RECORDED = "not recorded";
const orNot = (value: string | number | null | undefined) => (value === null || value === undefined || value === "" ? NOT_RECORDED : String(value));
const usd = (value: number | null) => (value === null ? NOT_RECORDED : `$${value.toFixed(4)}`);

/**
 * The report with every value a job recorded (models, hosts, versions, template ids, errors: set by
 * clients and admins) escaped for Markdown: no raw HTML, no link or image, no emphasis, no line break
 * (so no heading or list of its own). The service's own texts — limitations, built-in instructions
 * in their fenced block — keep their form.
 */
function inertInMarkdown(report: JobReport): JobReport {
  const inert = (value: unknown): unknown => {
    if (typeof value === "string") return value.replace(/[\r\n]+/g, " ").replace(/[\\`*_[\]<>&!|~]/g, (c) => `\\${c}`);
    if (Array.isArray(value)) return value.map(inert);
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, inert(inner)]));
    return value;
  };
  // Texts printed whole go in fenced blocks (`fenced`), where escapes would show: they stay as sent.
  const prompts = report.prompts?.map((prompt) => ({ ...(inert(prompt) as typeof prompt), instructions: prompt.instructions, text: prompt.text }));
  return { ...(inert(report) as JobReport), limitations: report.limitations, prompts: prompts ?? null };
}

/** A fenced code block that no run of backticks inside the text can close. */
function fenced(text: string): string[] {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [`${fence}text`, text, fence];
}

/** The report as Markdown, in plain words, for a methods section and its appendix. */
export function reportMarkdown(recorded: JobReport): string {
  const report = inertInMarkdown(recorded);
  const { noun, votes } = jobKind(report.kind).report;
  const count = (n: number) => `${n} ${n === 1 ? noun.slice(0, -1) : noun}`;
  const lines: string[] = [];
  lines.push(`# Methods report: ${report.title ?? `${report.kind} job`}`, "");
  lines.push(`- Job: ${report.job_id}`);
  lines.push(`- Task: ${report.task}.`);
  lines.push(`- Tool: ${report.tool.name}, version ${orNot(report.tool.version)}${report.tool.commit ? ` (commit ${report.tool.commit})` : ""}.`);
  lines.push(`- Status: ${report.status}${report.error ? ` (${report.error})` : ""}.`);
  if (report.mock) lines.push("- Mock job: answers came from the service's deterministic stand-in, not from a model; no cost was incurred.");
  if (report.methods_paragraph) lines.push("", "## Methods paragraph", "", report.methods_paragraph);
  lines.push(...askedSection(report));
  lines.push("", "## Model", "");
  lines.push(`- Requested: ${report.model.requested}`);
  lines.push(`- Resolved at admission: ${orNot(report.model.resolved)}`);
  lines.push(`- Reported by the provider: ${report.model.reported === null ? NOT_RECORDED : report.model.reported.length === 0 ? "none (no provider calls)" : report.model.reported.map((m) => `${m.model} (${m.calls} calls)`).join(", ")}`);
  lines.push(`- Provider: ${report.model.provider ? `${orNot(report.model.provider.host)} (profile ${report.model.provider.profile})` : NOT_RECORDED}`);
  lines.push("", "## Parameters", "");
  if (votes) {
    lines.push(`- Repetitions (votes per paper): ${orNot(report.repetitions)}`);
    lines.push(`- Threshold: ${orNot(report.threshold)}`);
    lines.push(`- Decision rule: ${orNot(report.decision_rule)}`);
  }
  if (report.parameters === null) lines.push(`- Sampling settings per stage: ${NOT_RECORDED}`);
  else {
    for (const [stage, p] of Object.entries(report.parameters)) {
      const sent = (value: string | number | null) => (value === null ? NOT_SENT : String(value));
      lines.push(`- ${stage}: temperature ${sent(p.temperature)}, max output tokens ${sent(p.max_output_tokens)}, reasoning effort ${sent(p.reasoning_effort)}`);
    }
  }
  lines.push("", "## Records and outcomes", "");
  lines.push(`- ${count(report.outcomes.items)} in the results.`);
  // Both decisions always, a zero too: "include: 882" alone reads as if exclusion was not possible.
  const outcomes = { ...(votes ? { include: 0, exclude: 0 } : {}), ...report.outcomes.by_outcome };
  for (const [outcome, count] of Object.entries(outcomes)) lines.push(`- ${outcome}: ${count}`);
  lines.push(`- ${noun} with an error: ${report.outcomes.errors}`);
  lines.push(...prismaSection(report));
  lines.push(...checklistSection(report));
  lines.push("", "## Usage, cost and time", "");
  const u = report.usage;
  lines.push(`- Tokens: ${u ? `${orNot(u.input_tokens)} input (${orNot(u.cached_input_tokens)} cached), ${orNot(u.output_tokens)} output` : NOT_RECORDED}`);
  lines.push(`- Calls: ${orNot(u?.calls)}; retries: ${orNot(u?.retries)}`);
  lines.push(`- Actual cost: ${report.mock ? "none (mock job)" : usd(report.actual_cost_usd)}; estimated at creation: ${report.mock ? "none (mock job)" : usd(report.estimated_cost_usd)}`);
  lines.push(`- Created: ${report.created_at}; completed: ${orNot(report.completed_at)}; duration: ${report.duration_ms === null ? NOT_RECORDED : `${(report.duration_ms / 1000).toFixed(1)} s`}`);
  lines.push("", "## Prompts", "");
  if (report.prompts === null) lines.push(NOT_RECORDED);
  else if (report.prompts.length === 0) lines.push("No prompts were sent (mock job).");
  for (const prompt of report.prompts ?? []) {
    lines.push(`### ${prompt.name}`, "", `Template \`${prompt.template_id}\`; SHA-256 of the exact text sent (without paper data): \`${prompt.sha256}\`.`, "");
    if (prompt.text !== undefined) lines.push("The text as sent (its SHA-256 is the hash above):", "", ...fenced(prompt.text), "");
    else if (prompt.instructions) lines.push("Built-in instructions of this service version (a configured override replaces them; the hash tells which text was sent):", "", ...fenced(prompt.instructions), "");
  }
  const c = report.recall_certificate;
  if (c) {
    lines.push(
      "",
      "## Recall certificate",
      "",
      `- ${c.statement} Sample ${c.sample_id} (${c.design}, ${c.sample_size} papers; ${c.labelled} labelled, ${c.labelled_included} included), ${lookText(c)}, on ${c.at}: ${certificateResult(c, "recall at least")}.`,
      `- Method: ${c.method}`,
    );
  }
  lines.push("", "## Known limitations", "");
  for (const limitation of report.limitations) lines.push(`- ${limitation}`);
  return `${lines.join("\n")}\n`;
}

function askedSection(report: JobReport): string[] {
  const asked = report.asked;
  if (!asked) return [];
  const lines = ["", "## What the job was asked", ""];
  if (asked.criteria !== null) {
    if (asked.criteria.length === 0) lines.push("- No eligibility criteria.");
    asked.criteria.forEach((c, i) => lines.push(`- Criterion ${i + 1} (${c.type})${c.name ? `, ${c.name}` : ""}: ${c.text}`));
  }
  if (asked.questions !== null) for (const [i, q] of asked.questions.entries()) lines.push(`- Research question ${i + 1}: ${q}`);
  if (asked.fields !== null) for (const f of asked.fields) lines.push(`- Field ${f.name} (${f.data_type_primary}${f.data_type_secondary && f.data_type_secondary !== "NA" ? `, ${f.data_type_secondary}` : ""}): ${f.description}`);
  if (asked.criteria === null && asked.questions === null && asked.fields === null) lines.push(NOT_RECORDED);
  if (asked.texts_cut_to_chars) lines.push("", `Each text above is cut to at most ${asked.texts_cut_to_chars.toLocaleString("en")} characters (too large for the job's record); the job was run on them whole.`);
  return lines;
}

function prismaSection(report: JobReport): string[] {
  const p = report.prisma;
  if (!p) return [];
  const lines = ["", "## PRISMA counts", ""];
  if (p.records_identified !== undefined) lines.push(`- Records identified (imported): ${p.records_identified}`, `- Duplicates removed before screening: ${p.duplicates_removed ?? 0}`);
  lines.push(`- Records in: ${p.records_in}`, `- With a result: ${p.results}`);
  if (p.included !== null) lines.push(`- Included: ${p.included}`);
  if (p.excluded !== null) lines.push(`- Excluded: ${p.excluded}`);
  lines.push(`- Errored (no usable answer from the model): ${p.errored}`);
  lines.push(`- Without abstract: ${p.without_abstract === null ? NOT_RECORDED : p.without_abstract}`);
  const reasons = Object.entries(p.exclusion_reasons);
  if (p.excluded !== null) {
    lines.push("- Exclusion reasons by criterion (a paper may fall on several):");
    if (reasons.length === 0) lines.push("  - none");
    for (const [reason, n] of reasons) lines.push(`  - ${reason}: ${n}`);
  }
  return lines;
}

function checklistSection(report: JobReport): string[] {
  if (!report.checklist) return [];
  const lines = ["", "## Reporting checklist (RAISE, PRISMA-trAIce)", "", "| Guideline | Item | Answer |", "| --- | --- | --- |"];
  for (const row of report.checklist) lines.push(`| ${row.guidelines.join(", ")} | ${row.item} | ${row.answer ?? "*for you to fill in*"} |`);
  return lines;
}
