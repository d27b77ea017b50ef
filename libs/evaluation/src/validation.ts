import type { BoundSides, CertifiedThreshold, ScreeningValidationResponse, ThresholdRow, ValidationLabel } from "@litrev/contracts";
import type { VoteLevel } from "./certificate";
import { recallCertificate } from "./recall-certificate";
import { kept, thresholdRow, type ScoredPaper } from "./metrics";
import { voteLevelChiSquare } from "./randomness";

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
  /** One-sided ("recall ≥ target with this confidence") unless asked otherwise. */
  sides?: BoundSides;
  /** How the labelled papers were drawn: a simple random sample of the job (default) or random within each vote level. */
  design?: "simple" | "stratified";
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
/** A χ² p-value below this flags labels whose vote-level counts are not a simple random sample's. */
const NOT_RANDOM_P = 0.001;

export function validateJob(input: ValidationInput): ScreeningValidationResponse {
  const { papers, repetitions, targetRecall, confidence } = input;
  const sides = input.sides ?? "one";
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

  // All the labels at once: one look, at the exact bound for the design the team says it drew;
  // unsaid, a simple random sample unless the level counts plainly are not one's (a sample drawn per
  // level at its own rates, read as simple, would be biased; read as stratified it is valid either way).
  const levels = voteLevels(papers, labelled);
  const randomness = voteLevelChiSquare(levels);
  const notRandom = randomness !== null && randomness.p_value < NOT_RANDOM_P;
  const design = input.design ?? (notRandom ? "stratified" : "simple");
  const certificate = recallCertificate(levels, { design, targetRecall, confidence, sides, repetitions, planThreshold: input.jobThreshold, plan: "once", sampleSize: labelled.length });
  const certified = new Map(certificate.thresholds.map((row) => [row.votes, row]));
  const thresholds: ThresholdRow[] = Array.from({ length: repetitions + 1 }, (_, votes) => {
    const row = thresholdRow(labelled, votes, { confidence, workload: total > 0 ? keptAll(votes) / total : 0 });
    const cert = certified.get(votes);
    if (row.recall === null) return row;
    // Threshold 0 reads everything; the others carry the certified (design-weighted, anytime) bounds.
    const recall_ci = votes === 0 ? { low: 1, high: 1 } : cert?.recall_lower != null ? { low: cert.recall_lower, high: cert.recall_upper ?? 1 } : null;
    return { ...row, recall_ci };
  });
  const includes = labelled.filter((p) => p.included).length;
  const best = certificate.recommended;
  const recommended = best
    ? { votes: best.votes, recall: best.recall_estimate ?? 1, recall_ci: { low: best.recall_lower!, high: best.recall_upper ?? 1 }, workload: best.workload, work_saved: 1 - best.workload, net_work_saved: best.net_work_saved }
    : null;

  return {
    job_id: input.jobId,
    papers: total,
    labelled: labelled.length,
    labelled_included: includes,
    repetitions,
    target_recall: targetRecall,
    confidence,
    sides,
    thresholds,
    recommended,
    recommendation_reason: certificate.reason,
    agreement: agreement(labelled, input.jobThreshold),
    missed_includes: best && best.labelled_below > 0 ? missedBelow(best, labelled) : null,
    certificate,
    randomness,
    warnings: warningsFor(labelled, includes, randomness, notRandom ? (input.design ?? "unsaid") : null),
  };
}

/** The job's papers grouped by include votes, with the labels each level holds. */
export function voteLevels(papers: readonly { score: number | null }[], labelled: readonly ScoredPaper[]): VoteLevel[] {
  const levels = new Map<number | null, VoteLevel>();
  const level = (score: number | null) => {
    let found = levels.get(score);
    if (!found) levels.set(score, (found = { score, papers: 0, labelled: 0, includes: 0 }));
    return found;
  };
  for (const paper of papers) level(paper.score).papers++;
  for (const paper of labelled) {
    const l = level(paper.score);
    l.labelled++;
    if (paper.included) l.includes++;
  }
  return [...levels.values()].sort((a, b) => (a.score ?? Infinity) - (b.score ?? Infinity));
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
  const { kappa, observed } = cohenKappa(both, onlyJob, onlyHumans, neither);
  return { job_threshold: jobThreshold, kappa, observed_agreement: observed, missed_ids: missed, extra_ids: extra };
}

/** Cohen's kappa of a 2×2 table (job include/exclude × human include/exclude); null when undefined (one class on both sides). */
export function cohenKappa(both: number, onlyJob: number, onlyHumans: number, neither: number): { kappa: number | null; observed: number } {
  const n = both + onlyJob + onlyHumans + neither;
  const observed = (both + neither) / n;
  const expected = ((both + onlyJob) * (both + onlyHumans) + (onlyHumans + neither) * (onlyJob + neither)) / (n * n);
  return { kappa: expected === 1 ? null : (observed - expected) / (1 - expected), observed };
}

/** Included papers nobody would read at the recommended threshold: the certificate's figures. */
function missedBelow(row: CertifiedThreshold, labelled: readonly ScoredPaper[]): ScreeningValidationResponse["missed_includes"] {
  return {
    votes: row.votes,
    papers_below: row.papers_below,
    labelled_below: row.labelled_below,
    labelled_includes_below: labelled.filter((p) => p.included && !kept(p.score, row.votes)).length,
    estimate: row.missed_estimate ?? 0,
    upper: row.missed_upper,
  };
}

function warningsFor(labelled: readonly ScoredPaper[], includes: number, randomness: ReturnType<typeof voteLevelChiSquare>, notRandom: "simple" | "stratified" | "unsaid" | null): string[] {
  const warnings: string[] = [];
  const n = labelled.length;
  if (includes === 0) warnings.push(`None of the ${n} labelled papers is included: recall cannot be estimated yet.`);
  if (includes === n) warnings.push("No labelled paper is excluded: specificity cannot be estimated.");

  if (randomness !== null && notRandom !== null) {
    const design = {
      simple: "The certificate takes them as one (design: simple, as the request says): if the papers were picked at random within each vote level at different rates, send design: stratified, which weights each level by its own sampling rate.",
      unsaid: "The certificate therefore takes them as random within each vote level (design: stratified), weighting each level by its own sampling rate, which is valid only if the papers within each level were picked at random; figures that ignore the design would be biased.",
      stratified: "The certificate weights each vote level by its own sampling rate (design: stratified), which is valid only if the papers within each level were picked at random; figures that ignore the design would be biased.",
    }[notRandom];
    warnings.push(
      `The labelled papers are not a simple random sample of the job: their counts per vote level differ from one (χ² = ${randomness.chi2.toFixed(1)} on ${randomness.df} degrees of freedom, p = ${randomness.p_value.toExponential(1)}). ${design}`,
    );
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
