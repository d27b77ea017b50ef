import type { ScreeningValidationResponse, ThresholdRow, ValidationLabel } from "@litrev/contracts";
import { clopperPearson, includesNeededFor } from "./binomial";
import { kept, thresholdRow, type ScoredPaper } from "./metrics";

/**
 * Validation of a finished screening job on a labelled sample of its papers: the figures of the
 * validation route, computed from the job's per-paper include votes and the human labels.
 */

/** One paper of the job as its stored results give it. */
export interface JobPaper {
  id: string | number;
  /** Include votes of the R, or null when the paper has no result (its screening failed). */
  score: number | null;
  /** The job's own decision (include = true), or null to derive it from the score and the job's threshold. */
  included: boolean | null;
}

export interface ValidationInput {
  jobId: string;
  papers: readonly JobPaper[];
  repetitions: number;
  /** The threshold the job's decisions were made with. */
  jobThreshold: number;
  labels: readonly ValidationLabel[];
  targetRecall: number;
  confidence: number;
}

/** Labels that cannot be used: ids the job does not have, or ids labelled more than once. */
export class LabelError extends Error {
  constructor(
    readonly kind: "unknown" | "duplicate",
    /** The offending labels: their position in the list and their id. */
    readonly labels: { index: number; id: string | number }[],
  ) {
    super(kind === "unknown" ? `${labels.length} labelled id(s) are not papers of this job` : `${labels.length} id(s) are labelled more than once`);
    this.name = "LabelError";
  }
}

/** Ids listed in a warning (the rest are counted). */
const LISTED_IDS = 20;
/** |z| beyond this (two-sided p ≈ 0.001) flags a sample whose scores differ from the job's. */
const SKEW_Z = 3.29;

export function validateJob(input: ValidationInput): ScreeningValidationResponse {
  const { papers, repetitions, targetRecall, confidence } = input;
  const byId = new Map<string, JobPaper>();
  for (const paper of papers) byId.set(String(paper.id), paper);

  const seen = new Set<string>();
  const duplicates: { index: number; id: string | number }[] = [];
  const unknown: { index: number; id: string | number }[] = [];
  input.labels.forEach((label, index) => {
    const key = String(label.id);
    if (seen.has(key)) duplicates.push({ index, id: label.id });
    seen.add(key);
    if (!byId.has(key)) unknown.push({ index, id: label.id });
  });
  if (unknown.length > 0) throw new LabelError("unknown", unknown);
  if (duplicates.length > 0) throw new LabelError("duplicate", duplicates);

  const labelled: (ScoredPaper & { decision: boolean })[] = input.labels.map((label) => {
    const paper = byId.get(String(label.id))!;
    return { id: paper.id, score: paper.score, included: label.included, decision: paper.included ?? kept(paper.score, input.jobThreshold) };
  });
  const total = papers.length;
  const keptAll = (votes: number) => papers.reduce((n, p) => n + (kept(p.score, votes) ? 1 : 0), 0);

  const thresholds: ThresholdRow[] = Array.from({ length: repetitions + 1 }, (_, votes) =>
    thresholdRow(labelled, votes, { confidence, workload: total > 0 ? keptAll(votes) / total : 0 }),
  );
  const includes = labelled.filter((p) => p.included).length;
  const needed = includesNeededFor(targetRecall, confidence);

  // Recall falls as the threshold rises, so the strictest row that reaches the target is the answer.
  const reaching = thresholds.filter((row) => row.recall_ci !== null && row.recall_ci.low >= targetRecall);
  const best = reaching.length ? reaching.reduce((a, b) => (b.votes > a.votes ? b : a)) : null;
  const recommended = best ? { votes: best.votes, recall: best.recall!, recall_ci: best.recall_ci!, workload: best.workload, work_saved: best.work_saved } : null;
  const recommendation_reason = best ? null : noRecommendation(thresholds, includes, needed, targetRecall, confidence);

  return {
    job_id: input.jobId,
    papers: total,
    labelled: labelled.length,
    labelled_included: includes,
    repetitions,
    target_recall: targetRecall,
    confidence,
    thresholds,
    recommended,
    recommendation_reason,
    agreement: agreement(labelled, input.jobThreshold),
    missed_includes: best ? missedBelow(best, papers, labelled, confidence) : null,
    warnings: warningsFor(input, labelled, includes, needed),
  };
}

function noRecommendation(rows: readonly ThresholdRow[], includes: number, needed: number, target: number, confidence: number): string {
  if (includes === 0) return "No labelled paper is included, so recall cannot be measured: label more papers (a random sample) until some included ones are among them.";
  const bestLow = Math.max(...rows.map((row) => row.recall_ci?.low ?? 0));
  return (
    `No threshold's recall lower bound reaches ${pct(target)} at ${pct(confidence)} confidence: the best is ${pct(bestLow)}. ` +
    (includes < needed
      ? `With ${includes} labelled includes no threshold can reach it; at least ${needed} are needed, all of them kept by the screener.`
      : "The screener misses too many of the labelled includes at every threshold above 0.")
  );
}

function agreement(labelled: readonly (ScoredPaper & { decision: boolean })[], jobThreshold: number): ScreeningValidationResponse["agreement"] {
  let both = 0;
  let onlyJob = 0;
  let onlyHumans = 0;
  let neither = 0;
  const missed: (string | number)[] = [];
  const extra: (string | number)[] = [];
  for (const paper of labelled) {
    if (paper.decision && paper.included) both++;
    else if (paper.decision) {
      onlyJob++;
      extra.push(paper.id);
    } else if (paper.included) {
      onlyHumans++;
      missed.push(paper.id);
    } else neither++;
  }
  const n = labelled.length;
  const observed = (both + neither) / n;
  const expected = ((both + onlyJob) * (both + onlyHumans) + (onlyHumans + neither) * (onlyJob + neither)) / (n * n);
  return { job_threshold: jobThreshold, kappa: expected === 1 ? null : (observed - expected) / (1 - expected), observed_agreement: observed, missed_ids: missed, extra_ids: extra };
}

/**
 * Included papers among those below the threshold: the labelled ones as counted, the unlabelled
 * ones at the rate the labelled ones below show (a random sample's estimate), with the rate's
 * upper Clopper–Pearson bound for the upper figure.
 */
function missedBelow(row: ThresholdRow, papers: readonly JobPaper[], labelled: readonly ScoredPaper[], confidence: number): ScreeningValidationResponse["missed_includes"] {
  const papersBelow = papers.reduce((n, p) => n + (kept(p.score, row.votes) ? 0 : 1), 0);
  const labelledBelow = labelled.reduce((n, p) => n + (kept(p.score, row.votes) ? 0 : 1), 0);
  if (labelledBelow === 0) return null;
  const found = row.fn;
  const rest = papersBelow - labelledBelow;
  return {
    votes: row.votes,
    papers_below: papersBelow,
    labelled_below: labelledBelow,
    labelled_includes_below: found,
    estimate: found + (rest * found) / labelledBelow,
    upper: found + rest * clopperPearson(found, labelledBelow, confidence).high,
  };
}

function warningsFor(input: ValidationInput, labelled: readonly ScoredPaper[], includes: number, needed: number): string[] {
  const warnings: string[] = [];
  const n = labelled.length;
  const target = `${pct(input.targetRecall)} recall at ${pct(input.confidence)} confidence`;
  if (includes === 0) {
    warnings.push(`None of the ${n} labelled papers is included: recall cannot be estimated. A lower bound of ${target} needs at least ${needed} labelled includes.`);
  } else if (includes < needed) {
    const papersNeeded = Math.ceil((needed * n) / includes);
    warnings.push(
      `Too few labelled includes for a meaningful bound: ${includes} of ${n} labelled papers are included, and a lower bound of ${target} needs at least ${needed} ` +
        `(all kept by the screener). At this sample's inclusion rate that is about ${papersNeeded} labelled papers.`,
    );
  }
  if (includes === n) warnings.push("No labelled paper is excluded: specificity cannot be estimated.");

  const skew = rankingSkew(input.papers, labelled, input.repetitions);
  if (skew !== null && skew > SKEW_Z) {
    warnings.push("The sample does not look random: the labelled papers have many more include votes than the job's papers overall (labels taken from the top of the ranking). Recall and the missed-include estimate assume a random sample; label a random one.");
  } else if (skew !== null && skew < -SKEW_Z) {
    warnings.push("The sample does not look random: the labelled papers have many fewer include votes than the job's papers overall. Recall and the missed-include estimate assume a random sample; label a random one.");
  }

  const errored = labelled.filter((p) => p.score === null).map((p) => p.id);
  if (errored.length > 0) {
    const listed = errored.slice(0, LISTED_IDS).join(", ");
    warnings.push(
      `${errored.length} labelled paper(s) have no screening result (their screening failed); they count as read at every threshold: ${listed}${errored.length > LISTED_IDS ? `, and ${errored.length - LISTED_IDS} more` : ""}.`,
    );
  }
  return warnings;
}

/**
 * z statistic of the labelled papers' mean include votes against the job's, for a simple random
 * sample without replacement (finite population correction). Null when it cannot be told: fewer
 * than two labels, every paper labelled, or all scores equal.
 */
function rankingSkew(papers: readonly JobPaper[], labelled: readonly ScoredPaper[], repetitions: number): number | null {
  const N = papers.length;
  const n = labelled.length;
  if (n < 2 || n >= N) return null;
  const value = (score: number | null) => score ?? repetitions;
  const mean = papers.reduce((s, p) => s + value(p.score), 0) / N;
  const variance = papers.reduce((s, p) => s + (value(p.score) - mean) ** 2, 0) / (N - 1);
  if (variance === 0) return null;
  const sampleMean = labelled.reduce((s, p) => s + value(p.score), 0) / n;
  return (sampleMean - mean) / Math.sqrt((variance / n) * (1 - n / N));
}

function pct(value: number): string {
  return `${+(value * 100).toFixed(1)}%`;
}
