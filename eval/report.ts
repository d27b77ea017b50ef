import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CriteriaSpec } from "./datasets";
import type { ConfidenceInterval as Interval, ThresholdRow } from "@litrev/contracts";
import type { CurvePoint } from "@litrev/evaluation";
import { recallWorkloadSvg } from "./plot";

export interface UsageFigures {
  /** `job`: the service's own usage figures; `estimate`: only the creation-time estimate was available. */
  source: "job" | "estimate";
  input_tokens_per_1000: number | null;
  output_tokens_per_1000: number | null;
  cost_usd_per_1000: number | null;
}

export interface ScreeningReport {
  kind: "screening-evaluation";
  generated_at: string;
  dataset: { name: string; source: string; records: number; included: number; sampled_from: number | null; criteria: CriteriaSpec };
  service: { base_url: string; job_id: string; model: string; repetitions: number; threshold: number; duration_ms: number | null; stage_timings: Record<string, number | null> };
  /** Present when the run used the fake provider's oracle mode instead of a language model. */
  oracle: { sensitivity: number; specificity: number; seed: number } | null;
  /** Figures at the threshold the job was created with. */
  at_job_threshold: ThresholdRow;
  thresholds: ThresholdRow[];
  wss_at_95: number | null;
  target: { recall: number; threshold: ThresholdRow | null };
  usage: UsageFigures;
  /** Create → results in hand, as the client saw it. */
  wall_seconds: number;
  /** Papers the job returned no result for (counted as included everywhere). */
  missing_results: number;
  /** Included studies the screener would have excluded at the job's threshold: what a reviewer must check. */
  missed_included: { id: string; title: string; votes: number | null }[];
  /** What the records gave the model to read. */
  data_quality: { records: number; without_abstract: number; without_title: number };
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
  if (r.missed_included.length === 0) lines.push("None: every study the review included was kept.", "");
  else {
    lines.push("| Id | Title | Include votes |", "| --- | --- | ---: |");
    for (const m of r.missed_included) lines.push(`| ${cell(m.id)} | ${cell(m.title) || "(no title)"} | ${m.votes ?? "–"} |`);
    lines.push("");
  }
  lines.push("## Data quality", "");
  const dq = r.data_quality;
  lines.push(
    `${dq.without_abstract} of ${dq.records} records (${pct(dq.records ? dq.without_abstract / dq.records : null)}) have no abstract and ${dq.without_title} no title: ` +
      "the model screened those on what little text there was. HTML in titles and abstracts was stripped before screening.",
    "",
  );
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
