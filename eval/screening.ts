import { ScreeningApi, type ApiOptions, type ScreeningJobView } from "./api";
import { sampleRecords, type LabelledReview } from "./datasets";
import { recallCurve, thresholdForRecall, thresholdRow, thresholdTable, wssAtRecall, type ScoredPaper } from "@litrev/evaluation";
import type { ScreeningReport, UsageFigures } from "./report";

export interface ScreeningEvalOptions {
  api: ApiOptions;
  review: LabelledReview;
  /** Left to the service's defaults when undefined. */
  model?: string | undefined;
  repetitions?: number | undefined;
  threshold?: number | undefined;
  limit?: number | undefined;
  targetRecall: number;
  timeoutMs: number;
  oracle?: ScreeningReport["oracle"];
  log?: (line: string) => void;
}

/** Screens a labelled review through the service's public API and measures the result against the labels. */
export async function evaluateScreening(options: ScreeningEvalOptions): Promise<ScreeningReport> {
  const { review, log = () => {} } = options;
  const records = options.limit ? sampleRecords(review.records, options.limit) : review.records;
  const api = new ScreeningApi(options.api);
  const started = Date.now();
  const jobId = await api.createJob({
    papers: records.map((r) => ({ id: r.id, title: r.title, abstract: r.abstract })),
    criteria: review.criteria.criteria,
    questions: review.criteria.questions,
    ...(options.model !== undefined ? { model: options.model } : {}),
    ...(options.repetitions !== undefined ? { repetitions: options.repetitions } : {}),
    ...(options.threshold !== undefined ? { threshold: options.threshold } : {}),
  });
  log(`job ${jobId}: ${records.length} papers queued`);
  let lastStage = "";
  const job = await api.waitForJob(jobId, {
    timeoutMs: options.timeoutMs,
    onProgress: (j) => {
      if (j.stage !== lastStage) log(`job ${jobId}: ${j.stage || j.status} (${Math.round(j.progress * 100)}%)`);
      lastStage = j.stage;
    },
  });
  const wallSeconds = (Date.now() - started) / 1000;
  if (job.status !== "completed") throw new Error(`job ${jobId} failed (${job.error_category ?? "unknown"}): ${job.error ?? "no error text"}`);

  const repetitions = numberOr(job.config.repetitions, options.repetitions ?? 5);
  const threshold = numberOr(job.config.threshold, options.threshold ?? 1);
  const scores = new Map<string, number | null>();
  for (const item of job.results ?? []) scores.set(String(item.id), item.final_score);
  let missing = 0;
  const papers: ScoredPaper[] = records.map((r) => {
    const score = scores.get(String(r.id));
    if (score === undefined || score === null || !Number.isFinite(score)) missing++;
    return { id: String(r.id), score: score === undefined || score === null || !Number.isFinite(score) ? null : score, included: r.included };
  });

  const thresholds = thresholdTable(papers, repetitions);
  /** The included studies a threshold drops: what a reviewer must check. */
  const missedAt = (votes: number) =>
    records.flatMap((r, i) => {
      const score = papers[i]!.score;
      return r.included && score !== null && score < votes ? [{ id: String(r.id), title: r.title, votes: score }] : [];
    });
  const target = thresholdForRecall(thresholds, options.targetRecall);
  return {
    kind: "screening-evaluation",
    generated_at: new Date().toISOString(),
    dataset: {
      name: review.name,
      source: review.source,
      records: records.length,
      included: records.filter((r) => r.included).length,
      sampled_from: records.length < review.records.length ? review.records.length : null,
      criteria: review.criteria,
      import: review.import ?? null,
    },
    service: {
      base_url: options.api.baseUrl,
      job_id: jobId,
      model: job.provenance?.model_resolved ?? (typeof job.config.model === "string" ? job.config.model : (job.model_version ?? options.model ?? "")),
      repetitions,
      threshold,
      duration_ms: job.duration_ms ?? null,
      stage_timings: job.stage_timings,
      provenance: job.provenance ?? null,
    },
    oracle: options.oracle ?? null,
    at_job_threshold: thresholdRow(papers, threshold),
    thresholds,
    wss_at_95: wssAtRecall(papers, repetitions, 0.95),
    target: { recall: options.targetRecall, threshold: target, missed_included: target ? missedAt(target.votes) : [] },
    usage: usageOf(job, records.length),
    wall_seconds: wallSeconds,
    missing_results: missing,
    missed_included: missedAt(threshold),
    data_quality: {
      records: records.length,
      without_abstract: records.filter((r) => !r.abstract.trim()).length,
      without_title: records.filter((r) => !r.title.trim()).length,
      duplicates: review.import ? { found: review.import.duplicates, merged: review.import.merged } : null,
    },
    curve: recallCurve(papers, repetitions),
  };
}

/**
 * Tokens and cost per 1,000 papers from the job's `usage` (input_tokens, output_tokens, cost_usd)
 * when the service reports one; otherwise only the creation-time cost estimate is known.
 */
function usageOf(job: ScreeningJobView, papers: number): UsageFigures {
  const per = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && papers > 0 ? (v * 1000) / papers : null);
  const usage = job.usage;
  if (usage && typeof usage === "object") {
    const u = usage as Record<string, unknown>;
    // The job's recorded actual cost when it has one (kept after completion), else its usage's figure.
    const cost = typeof job.actual_cost_usd === "number" ? job.actual_cost_usd : (u.cost_usd ?? u.estimated_cost_usd);
    return { source: "job", input_tokens_per_1000: per(u.input_tokens), output_tokens_per_1000: per(u.output_tokens), cost_usd_per_1000: per(cost) };
  }
  return { source: "estimate", input_tokens_per_1000: null, output_tokens_per_1000: null, cost_usd_per_1000: per(job.estimated_cost_usd) };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}
