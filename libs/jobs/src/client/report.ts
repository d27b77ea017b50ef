import { JOB_KINDS, JobUsage, Provenance, type JobReport, type JobService } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { resultOf, type JobRecord } from "./views";

/** What a service knows about its prompts beyond a job's record: the built-in text of each, by name. */
export type PromptInstructions = (name: string) => string | undefined;

/** A field the poll view carries once the job recorded it (null otherwise), checked against its contract. */
function recorded<T>(view: JsonRecord, field: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }): T | null {
  const parsed = schema.safeParse(view[field]);
  return view[field] !== undefined && view[field] !== null && parsed.success ? parsed.data : null;
}

/** Per-item outcomes, counted as the items go by, chunk by chunk. */
export class OutcomeCounter {
  readonly #byOutcome: Record<string, number> = {};
  #items = 0;
  #errors = 0;
  readonly #kind;

  constructor(service: JobService) {
    this.#kind = JOB_KINDS[service].report;
  }

  add(items: readonly JsonRecord[]): void {
    const { outcomeField, failedOutcome } = this.#kind;
    for (const item of items) {
      this.#items++;
      const outcome = typeof item[outcomeField] === "string" ? (item[outcomeField] as string) : "unknown";
      this.#byOutcome[outcome] = (this.#byOutcome[outcome] ?? 0) + 1;
      if ((typeof item.error === "string" && item.error) || outcome === failedOutcome) this.#errors++;
    }
  }

  get outcomes(): JobReport["outcomes"] {
    return { items: this.#items, by_outcome: { ...this.#byOutcome }, errors: this.#errors };
  }
}

/**
 * A finished job's methods report: what its record says (provenance, usage, cost, dates), what its
 * results count, and the known limits of the method. Built once, by the worker that ends the job,
 * into the job's artifact.
 */
export function buildReport(service: JobService, record: JobRecord, outcomes: JobReport["outcomes"], prompts: PromptInstructions = () => undefined): JobReport {
  const kind = JOB_KINDS[service];
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
  const prompts = report.prompts?.map((prompt) => ({ ...(inert(prompt) as typeof prompt), instructions: prompt.instructions }));
  return { ...(inert(report) as JobReport), limitations: report.limitations, prompts: prompts ?? null };
}

/** The report as Markdown, in plain words, for a methods section and its appendix. */
export function reportMarkdown(recorded: JobReport): string {
  const report = inertInMarkdown(recorded);
  const { noun, votes } = JOB_KINDS[report.kind].report;
  const count = (n: number) => `${n} ${n === 1 ? noun.slice(0, -1) : noun}`;
  const lines: string[] = [];
  lines.push(`# Methods report: ${report.kind} job ${report.job_id}`, "");
  lines.push(`- Task: ${report.task}.`);
  lines.push(`- Tool: ${report.tool.name}, version ${orNot(report.tool.version)}${report.tool.commit ? ` (commit ${report.tool.commit})` : ""}.`);
  lines.push(`- Status: ${report.status}${report.error ? ` (${report.error})` : ""}.`);
  if (report.mock) lines.push("- Mock job: answers came from the service's deterministic stand-in, not from a model; no cost was incurred.");
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
      lines.push(`- ${stage}: temperature ${orNot(p.temperature)}, max output tokens ${orNot(p.max_output_tokens)}, reasoning effort ${orNot(p.reasoning_effort)}`);
    }
  }
  lines.push("", "## Records and outcomes", "");
  lines.push(`- ${count(report.outcomes.items)} in the results.`);
  for (const [outcome, count] of Object.entries(report.outcomes.by_outcome)) lines.push(`- ${outcome}: ${count}`);
  lines.push(`- ${noun} with an error: ${report.outcomes.errors}`);
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
    if (prompt.instructions) lines.push("Built-in instructions of this service version (a configured override replaces them; the hash tells which text was sent):", "", "```text", prompt.instructions, "```", "");
  }
  const c = report.recall_certificate;
  if (c) {
    const result = c.threshold === null ? "the target was not certified" : `threshold ${c.threshold} certified, recall at least ${(c.recall_lower! * 100).toFixed(1)}%`;
    lines.push("", "## Recall certificate", "", `- ${c.statement} Sample ${c.sample_id} (${c.design}, ${c.sample_size} papers; ${c.labelled} labelled, ${c.labelled_included} included) on ${c.at}: ${result}.`, `- Method: ${c.method}`);
  }
  lines.push("", "## Known limitations", "");
  for (const limitation of report.limitations) lines.push(`- ${limitation}`);
  return `${lines.join("\n")}\n`;
}
