import { z } from "zod";
import { MAX_SCREENING_PAPERS } from "./screening";

/**
 * Validation of a finished screening job against the team's own labelled sample (human decisions
 * for some of its papers): recall and specificity per include-vote threshold with exact bounds,
 * the threshold to use, agreement with the job's decisions and the includes it would miss.
 * The figures are computed by libs/evaluation, the same code `pnpm eval` reports with.
 */

const PaperId = z.union([z.string().min(1).max(200), z.number().int()]);

export const ValidationLabel = z.object({
  id: PaperId,
  /** The human decision: true when the paper is included. */
  included: z.boolean(),
});
export type ValidationLabel = z.infer<typeof ValidationLabel>;

export const ScreeningValidationRequest = z.object({
  // At most one label per paper of the largest job; duplicates and unknown ids are refused by the route.
  labels: z.array(ValidationLabel).min(1).max(MAX_SCREENING_PAPERS),
  target_recall: z.number().gt(0).lt(1).default(0.95),
  /** Two-sided confidence of every interval (a lower bound is therefore one-sided at (1 + confidence) / 2). */
  confidence: z.number().min(0.5).lt(1).default(0.95),
});
export type ScreeningValidationRequest = z.infer<typeof ScreeningValidationRequest>;

export const ConfidenceInterval = z.object({ low: z.number(), high: z.number() });
export type ConfidenceInterval = z.infer<typeof ConfidenceInterval>;

/** Figures at one include-vote threshold: a paper is kept (a human reads it) when its include votes ≥ `votes`. */
export const ThresholdRow = z.object({
  votes: z.number().int(),
  tp: z.number().int(),
  fp: z.number().int(),
  fn: z.number().int(),
  tn: z.number().int(),
  /** Share of included papers kept; null without labelled includes. */
  recall: z.number().nullable(),
  /** Clopper–Pearson interval at the requested confidence. */
  recall_ci: ConfidenceInterval.nullable(),
  specificity: z.number().nullable(),
  specificity_ci: ConfidenceInterval.nullable(),
  precision: z.number().nullable(),
  f1: z.number().nullable(),
  /** Share of all the job's papers at or above the threshold: what humans still read. */
  workload: z.number(),
  work_saved: z.number(),
  /** Work saved over sampling: work_saved − (1 − recall). */
  wss: z.number().nullable(),
});
export type ThresholdRow = z.infer<typeof ThresholdRow>;

export const ValidationRecommendation = z.object({
  votes: z.number().int(),
  recall: z.number(),
  recall_ci: ConfidenceInterval,
  workload: z.number(),
  work_saved: z.number(),
});

export const ValidationAgreement = z.object({
  /** The job's own include threshold (its `threshold` setting) that its decisions used. */
  job_threshold: z.number(),
  /** Cohen's kappa between the job's decisions and the labels; null when it is undefined (one class only on both sides). */
  kappa: z.number().nullable(),
  /** Share of labelled papers where the job and the humans agree. */
  observed_agreement: z.number(),
  /** Labelled papers the humans included and the job excluded. */
  missed_ids: z.array(PaperId),
  /** Labelled papers the job included and the humans excluded. */
  extra_ids: z.array(PaperId),
});

export const MissedIncludes = z.object({
  /** The threshold the estimate is for (the recommended one). */
  votes: z.number().int(),
  /** All the job's papers below the threshold (nobody would read them). */
  papers_below: z.number().int(),
  labelled_below: z.number().int(),
  labelled_includes_below: z.number().int(),
  /** Expected included papers below the threshold, labelled ones counted as they are and the rest extrapolated from the sample. */
  estimate: z.number(),
  /** Upper bound at the requested confidence (Clopper–Pearson on the labelled papers below). */
  upper: z.number(),
});

export const ScreeningValidationResponse = z.object({
  job_id: z.string(),
  papers: z.number().int(),
  labelled: z.number().int(),
  labelled_included: z.number().int(),
  repetitions: z.number().int(),
  target_recall: z.number(),
  confidence: z.number(),
  thresholds: z.array(ThresholdRow),
  /** The strictest threshold whose recall lower bound reaches `target_recall`, or null (see `recommendation_reason`). */
  recommended: ValidationRecommendation.nullable(),
  recommendation_reason: z.string().nullable(),
  agreement: ValidationAgreement,
  /** Included papers expected below the recommended threshold; null without a recommendation or labels below it. */
  missed_includes: MissedIncludes.nullable(),
  warnings: z.array(z.string()),
});
export type ScreeningValidationResponse = z.infer<typeof ScreeningValidationResponse>;
