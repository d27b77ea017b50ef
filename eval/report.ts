import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CriteriaSpec, ImportSummary } from "./datasets";
import type { ConfidenceInterval as Interval, Provenance, ThresholdRow } from "@litrev/contracts";
import type { CurvePoint } from "@litrev/evaluation";
import { recallWorkloadSvg } from "./plot";

export interface UsageFigures {
  /** `job`: the service's own usage figures; `estimate`: only the creation-time estimate was available. */
  source: "job" | "estimate";
  input_tokens_per_1000: number | null;
  output_tokens_per_1000: number | null;
  cost_usd_per_1000: number | null;
}

export interface MissedStudy {
  id: string;
  title: string;
  votes: number | null;
}

export interface ScreeningReport {
  kind: "screening-evaluation";
  generated_at: string;
  dataset: { name: string; source: string; records: number; included: number; sampled_from: number | null; criteria: CriteriaSpec; import: ImportSummary | null };
  service: {
    base_url: string;
    job_id: string;
    /** The model the job ran: its provenance's resolved model when it records one. */
    model: string;
    repetitions: number;
    threshold: number;
    duration_ms: number | null;
    stage_timings: Record<string, number | null>;
    /** The job's provenance as polled (resolved model, service commit, prompt hashes); null when the service records none. */
    provenance: Provenance | null;
  };
  /** Present when the run used the fake provider's oracle mode instead of a language model. */
  oracle: { sensitivity: number; specificity: number; seed: number } | null;
  /** Figures at the threshold the job was created with. */
  at_job_threshold: ThresholdRow;
  thresholds: ThresholdRow[];
  wss_at_95: number | null;
  /** The recommended threshold: the strictest reaching the target recall, and the included studies it drops. */
  target: { recall: number; threshold: ThresholdRow | null; missed_included: MissedStudy[] };
  usage: UsageFigures;
  /** Create → results in hand, as the client saw it. */
  wall_seconds: number;
  /** Papers the job returned no result for (counted as included everywhere). */
  missing_results: number;
  /** Included studies the screener would have excluded at the job's threshold: what a reviewer must check. */
  missed_included: MissedStudy[];
  /** What the records gave the model to read; `duplicates` when they were imported from reference files. */
  data_quality: { records: number; without_abstract: number; without_title: number; duplicates: { found: number; merged: boolean } | null };
  curve: CurvePoint[];
}

export const REPORT_FILES = { json: "report.json", markdown: "report.md", svg: "recall-workload.svg" } as const;

export function writeReport(dir: string, report: ScreeningReport): { json: string; markdown: string; svg: string } {
  mkdirSync(dir, { recursive: true });
  const paths = { json: join(dir, REPORT_FILES.json), markdown: join(dir, REPORT_FILES.markdown), svg: join(dir, REPORT_FILES.svg) };
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(paths.markdown, markdownReport(report));
  writeFileSync(paths.svg, plotOf(report));
  return paths;
}

export function plotOf(report: ScreeningReport): string {
  return recallWorkloadSvg({
    title: `${report.dataset.name}: recall against reading workload`,
    subtitle: `${report.dataset.records} papers, ${report.dataset.included} included · ${report.service.model} · ${report.service.repetitions} votes per paper${report.oracle ? " · fake provider (oracle)" : ""}`,
    curve: report.curve,
    targetRecall: report.target.recall,
    chosenVotes: report.target.threshold?.votes ?? null,
    repetitions: report.service.repetitions,
  });
}

const pct = (v: number | null | undefined, digits = 1) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(digits)}%`);
const ci = (v: Interval | null) => (v ? ` (${pct(v.low)}–${pct(v.high)})` : "");
/** Text safe inside a Markdown table cell. */
const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();
const num = (v: number | null, digits = 0) => (v === null ? "–" : v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }));

export function markdownReport(r: ScreeningReport): string {
  const at = r.at_job_threshold;
  const target = r.target.threshold;
  const lines: string[] = [];
  lines.push(`# Screening evaluation: ${r.dataset.name}`, "");
  lines.push(
    `${r.dataset.records} papers (${r.dataset.included} included by the review${r.dataset.sampled_from ? `; a sample of the ${r.dataset.sampled_from} records` : ""}), ` +
      `model \`${r.service.model}\`, ${r.service.repetitions} votes per paper, job \`${r.service.job_id}\` on ${r.service.base_url}` +
      `${r.oracle ? `; **fake provider in oracle mode** (per-vote sensitivity ${r.oracle.sensitivity}, specificity ${r.oracle.specificity}, seed ${r.oracle.seed}), not a language model` : ""}.`,
    "",
  );
  lines.push(`![Recall against the share of papers a human still reads](${"recall-workload.svg"})`, "");
  lines.push(`## At the job's threshold (include at ≥ ${r.service.threshold} of ${r.service.repetitions} votes)`, "");
  lines.push("| Figure | Value |", "| --- | ---: |");
  lines.push(`| Recall (sensitivity), 95% CI | ${pct(at.recall)}${ci(at.recall_ci)} |`);
  lines.push(`| Specificity, 95% CI | ${pct(at.specificity)}${ci(at.specificity_ci)} |`);
  lines.push(`| Precision | ${pct(at.precision)} |`);
  lines.push(`| F1 | ${num(at.f1, 3)} |`);
  lines.push(`| Included studies missed | ${at.fn} of ${at.tp + at.fn} |`);
  lines.push(`| Papers a human still reads | ${at.tp + at.fp} of ${r.dataset.records} (${pct(at.workload)}) |`);
  lines.push(`| WSS at this threshold | ${pct(at.wss)} |`);
  lines.push(`| WSS@95 (reading in order of votes) | ${pct(r.wss_at_95)} |`);
  lines.push("");
  lines.push(`### Included studies missed at this threshold (${r.missed_included.length})`, "");
  lines.push(...missedTable(r.missed_included));
  lines.push("## Data quality", "");
  const dq = r.data_quality;
  lines.push(
    `${dq.without_abstract} of ${dq.records} records (${pct(dq.records ? dq.without_abstract / dq.records : null)}) have no abstract and ${dq.without_title} no title: ` +
      "the model screened those on what little text there was. HTML in titles and abstracts was stripped before screening." +
      (dq.duplicates
        ? ` The files held ${dq.duplicates.found} duplicate records (same DOI, PMID or title)${dq.duplicates.merged ? ", merged before screening" : ", screened as they were"}.`
        : ""),
    "",
  );
  const from = r.dataset.import?.included_from;
  if (from) {
    lines.push(
      `Labels: a record counts as included when it matches one of the ${from.studies} studies in ${from.files.map((f) => `\`${f.replace(/^.*\//, "")}\``).join(", ")} ` +
        `by DOI, PMID or title; ${from.matched} matched${from.unmatched.length ? `, ${from.unmatched.length} did not (${from.unmatched.slice(0, 20).map(cell).join(", ")}${from.unmatched.length > 20 ? ", …" : ""})` : ""}.`,
      "",
    );
  }
  lines.push(`## Every vote threshold`, "");
  lines.push("| Include at ≥ | Recall | Specificity | Precision | F1 | Missed | Human reads | Work saved | WSS |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of r.thresholds) {
    const mark = target && row.votes === target.votes ? " ◀" : "";
    lines.push(
      `| ${row.votes}${mark} | ${pct(row.recall)} | ${pct(row.specificity)} | ${pct(row.precision)} | ${num(row.f1, 3)} | ${row.fn} | ${row.tp + row.fp} (${pct(row.workload)}) | ${pct(row.work_saved)} | ${pct(row.wss)} |`,
    );
  }
  lines.push("");
  lines.push(
    target
      ? `**Target recall ${pct(r.target.recall, 0)}**: the strictest threshold reaching it is **≥ ${target.votes} of ${r.service.repetitions} votes** ` +
          `(recall ${pct(target.recall)}, lower 95% bound ${pct(target.recall_ci?.low)}), saving ${pct(target.work_saved)} of the reading (WSS ${pct(target.wss)}).`
      : `**Target recall ${pct(r.target.recall, 0)}**: no threshold reaches it (the labels have no inclusion).`,
    "",
  );
  if (target) {
    lines.push(`### Included studies missed at the recommended threshold, ≥ ${target.votes} (${r.target.missed_included.length})`, "");
    lines.push(...missedTable(r.target.missed_included));
  }
  lines.push(...criteriaSection(r.dataset.criteria), ...provenanceSection(r.service.provenance));
  lines.push("## Cost and time", "");
  lines.push("| Figure | Value |", "| --- | ---: |");
  if (r.usage.source === "job") {
    lines.push(`| Input tokens per 1,000 papers | ${num(r.usage.input_tokens_per_1000)} |`);
    lines.push(`| Output tokens per 1,000 papers | ${num(r.usage.output_tokens_per_1000)} |`);
    lines.push(`| Cost per 1,000 papers (USD) | ${num(r.usage.cost_usd_per_1000, 4)} |`);
  } else {
    lines.push(`| Tokens per 1,000 papers | not reported by the service |`);
    lines.push(`| Estimated cost per 1,000 papers (USD, the service's ±30% estimate) | ${num(r.usage.cost_usd_per_1000, 4)} |`);
  }
  lines.push(`| Wall time (create → results) | ${r.wall_seconds.toFixed(1)} s |`);
  lines.push(`| Job duration | ${r.service.duration_ms === null ? "–" : `${(r.service.duration_ms / 1000).toFixed(1)} s`} |`);
  for (const [stage, ms] of Object.entries(r.service.stage_timings)) lines.push(`| Stage ${stage} | ${ms === null ? "–" : `${(ms / 1000).toFixed(1)} s`} |`);
  if (r.missing_results > 0) lines.push("", `⚠ The job returned no result for ${r.missing_results} papers; they count as included (to be read) at every threshold.`);
  lines.push("", "Figures are defined in docs/evaluation.md. The labels are the review's final (full-text) decisions.", "");
  return lines.join("\n");
}

function missedTable(missed: readonly MissedStudy[]): string[] {
  if (missed.length === 0) return ["None: every study the review included was kept.", ""];
  return ["| Id | Title | Include votes |", "| --- | --- | ---: |", ...missed.map((m) => `| ${cell(m.id)} | ${cell(m.title) || "(no title)"} | ${m.votes ?? "–"} |`), ""];
}

/** The criteria and research questions exactly as the job was sent them. */
function criteriaSection(spec: CriteriaSpec): string[] {
  const lines = ["## Criteria sent", ""];
  if (spec.questions.length) lines.push("Research questions:", "", ...spec.questions.map((q) => `- ${cell(q)}`), "");
  if (spec.criteria.length === 0) lines.push("No criteria: the job screened against the research questions alone.", "");
  else {
    lines.push("| # | Name | Type | Criterion |", "| ---: | --- | --- | --- |");
    spec.criteria.forEach((c, i) => lines.push(`| ${i + 1} | ${cell(c.name) || "–"} | ${c.type} | ${cell(c.value)} |`));
    lines.push("");
  }
  return lines;
}

/** What the job recorded about its model, code and prompts, so a reader can repeat it and check the prompt hashes. */
function provenanceSection(p: Provenance | null): string[] {
  const lines = ["## Provenance", ""];
  if (!p) return [...lines, "The service recorded no provenance for this job.", ""];
  const used = p.models_used.length ? p.models_used.map((m) => `\`${m.model}\` (${m.calls} calls)`).join(", ") : "none reported (a mock job)";
  lines.push("| Field | Value |", "| --- | --- |");
  lines.push(`| Model requested | \`${cell(p.model_requested)}\` |`);
  lines.push(`| Model resolved (every call went to it) | \`${cell(p.model_resolved)}\` |`);
  lines.push(`| Models the provider reported | ${cell(used)} |`);
  lines.push(`| Service version | ${cell(p.service_version.version)}${p.service_version.commit ? `, commit \`${cell(p.service_version.commit)}\`` : " (commit not recorded)"} |`);
  lines.push(`| Provider | ${cell(p.provider.host ?? "none")} (${cell(p.provider.profile)}) |`);
  lines.push(`| Decision rule | ${cell(p.decision_rule)} |`);
  for (const [stage, s] of Object.entries(p.parameters)) {
    const setting = (v: string | number | null) => (v === null ? "provider default" : String(v));
    lines.push(`| Stage ${cell(stage)} | temperature ${setting(s.temperature)}, max output tokens ${setting(s.max_output_tokens)}, reasoning effort ${setting(s.reasoning_effort)} |`);
  }
  lines.push("");
  if (p.prompts.length) {
    lines.push("| Prompt | Template | SHA-256 of the text sent (without paper data) |", "| --- | --- | --- |");
    for (const prompt of p.prompts) lines.push(`| ${cell(prompt.name)} | ${cell(prompt.template_id)} | \`${prompt.sha256}\` |`);
    lines.push("");
  }
  return lines;
}
