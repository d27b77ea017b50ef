import { z } from "zod";
import { CsvMode } from "./common";
import { ServiceError } from "./errors";
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
  /** Confidence of the recall bound: one-sided by default ("95% recall with 95% confidence"). */
  confidence: z.number().min(0.5).lt(1).default(0.95),
  sides: z.enum(["one", "two"]).default("one"),
  /**
   * How the team drew the labelled papers: simple (a simple random sample of the job's papers: the
   * exact one-look bound, 59 of 59 includes kept certifies 95%) or stratified (random within each
   * include-vote level, at rates of its choosing: each level bounded on its own). One look either
   * way. Unsaid: simple, unless the labels' counts per vote level are plainly not a simple random
   * sample's (the χ² check, p < 0.001), then stratified (the answer's warnings say so).
   */
  design: z.enum(["simple", "stratified"]).optional(),
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
  /** The design-weighted point estimate (optimistic after choosing the threshold: cite `recall_ci.low`). */
  recall: z.number(),
  /** The certified bounds (anytime-valid; `high` is 1 when one-sided). */
  recall_ci: ConfidenceInterval,
  workload: z.number(),
  work_saved: z.number(),
  /** Work saved counting the labelled sample: papers below the threshold nobody read, over all papers. */
  net_work_saved: z.number(),
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
  /** Expected included papers below the threshold: the design-weighted (Horvitz–Thompson) estimate. */
  estimate: z.number(),
  /** Upper bound at the requested confidence: exact finite-population (hypergeometric), anytime-valid. */
  upper: z.number(),
});

export const SampleDesign = z.enum(["simple", "stratified", "below_threshold"]);
export type SampleDesign = z.infer<typeof SampleDesign>;
export const BoundSides = z.enum(["one", "two"]);
export type BoundSides = z.infer<typeof BoundSides>;
/**
 * When the team will analyse the labels: "once", after the last label of the sample (the exact
 * one-look bound; earlier looks are answered as progress), or "anytime", as they arrive however
 * often (the anytime-valid sequence).
 */
export const LookPlan = z.enum(["once", "anytime"]);
export type LookPlan = z.infer<typeof LookPlan>;

/** The certificate at one include-vote threshold: a paper is kept (read) when its include votes ≥ `votes`. */
export const CertifiedThreshold = z.object({
  votes: z.number().int(),
  /** Share of the job's papers kept at this threshold. */
  workload: z.number(),
  /** Design-weighted point estimate of recall; null while no include is labelled. */
  recall_estimate: z.number().nullable(),
  /** Certified lower bound on recall at the requested confidence (anytime-valid); null when this design cannot bound it. */
  recall_lower: z.number().nullable(),
  /** Certified upper bound (two-sided only; 1 when one-sided). */
  recall_upper: z.number().nullable(),
  papers_below: z.number().int(),
  labelled_below: z.number().int(),
  /** Design-weighted estimate of the included papers nobody would read; null without labels below. */
  missed_estimate: z.number().nullable(),
  /** Certified upper bound on them (exact, finite-population, anytime-valid). */
  missed_upper: z.number().int(),
  /** Share of papers nobody reads, counting the labelled sample as read. */
  net_work_saved: z.number(),
});
export type CertifiedThreshold = z.infer<typeof CertifiedThreshold>;

/** What the labels can show when the target cannot be: each alternative in numbers and in words. */
export const CanShow = z.object({
  /** The highest recall certified at the requested confidence, and at which threshold (null: none above 0). */
  recall: z.object({ votes: z.number().int(), recall_lower: z.number() }).nullable(),
  /** The highest of the usual confidences (50%–99%) at which the target is certified, or null. */
  confidence: z.number().nullable(),
  /** Reading every paper below threshold 1 needs no sample at all: how many papers that is. */
  read_below: z.object({ votes: z.number().int(), papers: z.number().int() }),
  summary: z.string(),
});
export type CanShow = z.infer<typeof CanShow>;

export const Certificate = z.object({
  /** When the labels are analysed (see LookPlan); anytime for samples drawn before plans existed. */
  plan: LookPlan.default("anytime"),
  /** certificate: the bounds hold for this look; progress: a look before the single planned one (estimates only, no bound). */
  look: z.enum(["certificate", "progress"]).default("certificate"),
  design: SampleDesign,
  target_recall: z.number(),
  confidence: z.number(),
  sides: BoundSides,
  /** The method in one paragraph, for a methods section. */
  method: z.string(),
  /** The claim in words, one-sided or two-sided as requested. */
  statement: z.string(),
  labelled: z.number().int(),
  labelled_included: z.number().int(),
  thresholds: z.array(CertifiedThreshold),
  /** The strictest threshold certified, tested in order from 1 up (a fixed sequence: no error spent on the choice). */
  recommended: CertifiedThreshold.nullable(),
  /** Why there is no recommendation, in plain words; null with one. */
  reason: z.string().nullable(),
  can_show: CanShow.nullable(),
  /** Labels this design needs in all to certify the target, planned from the labels so far and the job's votes; null when no sample smaller than the job can. */
  labels_needed: z.number().int().nullable(),
  labels_still_needed: z.number().int().nullable(),
  /** Whether a sample can certify the target and still leave at least 5% of the papers unread (net of the sample). */
  feasible: z.boolean(),
});
export type Certificate = z.infer<typeof Certificate>;

/** χ² test of the labelled papers' vote-level counts against a simple random sample's. */
export const RandomnessCheck = z.object({
  chi2: z.number(),
  df: z.number().int(),
  p_value: z.number(),
});

export const ScreeningValidationResponse = z.object({
  job_id: z.string(),
  papers: z.number().int(),
  labelled: z.number().int(),
  labelled_included: z.number().int(),
  repetitions: z.number().int(),
  target_recall: z.number(),
  confidence: z.number(),
  sides: BoundSides,
  thresholds: z.array(ThresholdRow),
  /** The strictest threshold whose recall lower bound reaches `target_recall`, or null (see `recommendation_reason`). */
  recommended: ValidationRecommendation.nullable(),
  recommendation_reason: z.string().nullable(),
  agreement: ValidationAgreement,
  /** Included papers expected below the recommended threshold; null without a recommendation or labels below it. */
  missed_includes: MissedIncludes.nullable(),
  /** The recall certificate the figures above come from (one look, on the design the request names). */
  certificate: Certificate,
  /** Null when it cannot be told (fewer than two labels, every paper labelled, one vote level). */
  randomness: RandomnessCheck.nullable(),
  warnings: z.array(z.string()),
});
export type ScreeningValidationResponse = z.infer<typeof ScreeningValidationResponse>;

/** The most papers one drawn validation sample holds (the record of its labels stays one stored value). */
export const MAX_VALIDATION_SAMPLE = 5_000;

/** `POST /v1/screening/jobs/{job_id}/validation-samples`: the service draws the sample to label. */
export const ValidationSampleRequest = z.object({
  target_recall: z.number().gt(0).lt(1).default(0.95),
  confidence: z.number().min(0.5).lt(1).default(0.95),
  sides: BoundSides.default("one"),
  design: SampleDesign.default("simple"),
  /** Papers to draw; by default the labels the plan needs, unless that is more than half the papers (or none can show the target): then a fifth of the job, at least 100, at most half. */
  size: z.number().int().min(1).max(MAX_VALIDATION_SAMPLE).optional(),
  seed: z.number().int().min(0).max(2_147_483_647).optional(),
  /** below_threshold: the include-vote threshold whose unread papers are sampled (default: the job's own, at least 1). */
  threshold: z.number().int().min(1).optional(),
  /**
   * When the team will look: once, after the sample's last label (the exact one-look bound, the
   * fewest labels; earlier looks answer as progress), or anytime, as labels arrive (default).
   */
  plan: LookPlan.default("anytime"),
  /** anytime: how many labels the team means to label between looks, if it knows (sizes the plan; any look stays valid). */
  look_every: z.number().int().min(1).max(MAX_VALIDATION_SAMPLE).optional(),
});
export type ValidationSampleRequest = z.infer<typeof ValidationSampleRequest>;

/** `POST …/validation-samples/{sample_id}/labels`: a batch of labels for papers of the sample. */
export const ValidationSampleLabelsRequest = z.object({
  labels: z.array(ValidationLabel).min(1).max(MAX_VALIDATION_SAMPLE),
  /** below_threshold: included papers the team found reading the papers at or above the threshold. */
  includes_read: z.number().int().min(0).optional(),
});
export type ValidationSampleLabelsRequest = z.infer<typeof ValidationSampleLabelsRequest>;

export const ValidationSampleParams = z.object({ job_id: z.string(), sample_id: z.string() });

/** Sample ids are the UUIDs the service draws; anything else names no sample. */
export const SampleId = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "Expected a validation sample id (a UUID)");

/** The answer for a sample that is missing or another client's (as a poll answers for a job). */
export const sampleNotFound = () => new ServiceError("not_found", "Validation sample not found", { simple: true });

/** `GET …/validation-samples/{sample_id}/download`: the sample's papers for blind screening. */
export const ValidationSampleDownloadQuery = z.object({
  format: z.enum(["csv", "ris"]).default("csv").describe("csv: order, id, title, abstract and an empty `included` column; ris: one record per paper (ID, TI, AB)"),
  csv: CsvMode.default("spreadsheet").describe("spreadsheet (default): a byte-order mark and the formula guard on text cells; plain: values as they are"),
});

/** A vote level's share of the sample: its inclusion probability is sampled / papers. */
export const SampleStratum = z.object({
  votes: z.number().nullable(),
  papers: z.number().int(),
  sampled: z.number().int(),
  inclusion_probability: z.number(),
});

/** One analysis of the labels, as recorded. */
export const ValidationLook = z.object({
  at: z.string(),
  labelled: z.number().int(),
  labelled_included: z.number().int(),
  recommended_votes: z.number().int().nullable(),
  recall_lower: z.number().nullable(),
});

export const DiscordantPaper = z.object({
  id: PaperId,
  votes: z.number().nullable(),
  job_decision: z.enum(["include", "exclude"]),
  label: z.enum(["include", "exclude"]),
});

export const ValidationSample = z.object({
  sample_id: z.string(),
  job_id: z.string(),
  created_at: z.string(),
  design: SampleDesign,
  seed: z.number().int(),
  /** below_threshold: the threshold sampled below; null for the other designs. */
  threshold: z.number().int().nullable(),
  target_recall: z.number(),
  confidence: z.number(),
  sides: BoundSides,
  /** The papers to screen, in the order to screen them (the bound assumes this order). */
  paper_ids: z.array(PaperId),
  strata: z.array(SampleStratum),
  /** When the team said it will look (anytime for samples drawn before plans existed). */
  plan: LookPlan.default("anytime"),
  look_every: z.number().int().nullable().default(null),
  /** Labels the plan is expected to need to certify the target, from the job's votes (and, once labels arrive, from them). */
  labels_needed: z.number().int().nullable(),
  /** At the draw, from the job's votes: what each plan would be expected to need, to choose between them before a label is spent. */
  labels_needed_by_plan: z.object({ once: z.number().int().nullable(), anytime: z.number().int().nullable() }).nullable().default(null),
  /** Whether the target can be shown on this job with a sample at all (see `certificate.reason`). */
  feasible: z.boolean(),
  labelled: z.number().int(),
  labels: z.array(ValidationLabel),
  looks: z.array(ValidationLook),
  /** The latest certificate (with no label yet: the plan and, when the target cannot be shown, why). */
  certificate: Certificate,
  agreement: z.object({ kappa: z.number().nullable(), discordant: z.array(DiscordantPaper) }).nullable(),
  warnings: z.array(z.string()),
});
export type ValidationSample = z.infer<typeof ValidationSample>;

/** The latest recall certificate of a job's validation samples, as its methods report cites it. */
export const ReportCertificate = z.object({
  sample_id: z.string(),
  design: SampleDesign,
  plan: LookPlan.default("anytime"),
  /** progress: a look before a single planned one (no bound yet). */
  look: z.enum(["certificate", "progress"]).default("certificate"),
  sample_size: z.number().int(),
  labelled: z.number().int(),
  labelled_included: z.number().int(),
  /** The recommended threshold, or null when the target was not certified. */
  threshold: z.number().int().nullable(),
  recall_lower: z.number().nullable(),
  statement: z.string(),
  method: z.string(),
  /** The look it comes from. */
  at: z.string(),
});
export type ReportCertificate = z.infer<typeof ReportCertificate>;

/**
 * A job's latest recall certificate with its owner, kept by the screening service beside the
 * samples (`certificate.<job>`, written at every look) and read by any gateway for the methods
 * report, without asking the service.
 */
export const StoredCertificate = z.object({ owner: z.string().nullable(), certificate: ReportCertificate });
export type StoredCertificate = z.infer<typeof StoredCertificate>;

/**
 * A validation sample as the screening service keeps it (`sample.<job>.<sample>` in its validation
 * bucket): the answer as last given, plus what the next look needs. Written by the service only;
 * a gateway reads the part an export marks (`SampleMembership`).
 */
export const StoredValidationSample = z.object({
  owner: z.string().nullable(),
  /** Per sampled paper, in the sample's order: include votes and the job's decision. */
  scores: z.array(z.number().nullable()),
  decisions: z.array(z.boolean().nullable()),
  /** The job's vote levels (papers per level), as drawn. */
  levels: z.array(z.object({ score: z.number().nullable(), papers: z.number().int() })),
  repetitions: z.number().int(),
  job_threshold: z.number(),
  includes_read: z.number().int().nullable(),
  sample: ValidationSample,
});
export type StoredValidationSample = z.infer<typeof StoredValidationSample>;

/** What an export reads of a stored sample: its owner, papers and labels (at most MAX_VALIDATION_SAMPLE each, so held whole while the export streams). */
export const SampleMembership = z.object({
  owner: z.string().nullable(),
  sample: z.object({
    sample_id: z.string(),
    job_id: z.string(),
    paper_ids: z.array(PaperId).max(MAX_VALIDATION_SAMPLE),
    labels: z.array(ValidationLabel).max(MAX_VALIDATION_SAMPLE),
  }),
});
export type SampleMembership = z.infer<typeof SampleMembership>;

/** The columns (CSV) and fields (JSON Lines) a screening export adds with `sample=<sample_id>`. */
export const SAMPLE_MARK_FIELDS = {
  /** true when the paper is in the sample, false otherwise. */
  sampled: "validation_sampled",
  /** The human label: include or exclude; empty (CSV) or null (JSON Lines) when not labelled or not sampled. */
  label: "validation_label",
} as const;
