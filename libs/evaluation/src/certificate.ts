import type { BoundSides, CertifiedThreshold, LookPlan, SampleDesign } from "@litrev/contracts";
import { betCertifies, betRecallLower, type SequenceLabel } from "./betting";
import { exactCountBounds, oneLookCertifies, oneLookRecallLower } from "./one-look";
import { countBounds, type CountBounds, type GroupCount } from "./sequence";

/**
 * The recall certificate: per include-vote threshold, a lower bound on the share of the job's
 * included papers that a human would read, valid at the requested confidence however often it is
 * computed as labels arrive.
 *
 * Recall at threshold t is A / (A + B), A the included papers kept (votes ≥ t, or no result) and
 * B those below. A lower bound on A and an upper bound on B, both exact for a finite group sampled
 * without replacement and anytime-valid (./sequence), give the recall bound; the error is split
 * between them in advance (a quarter to A, three quarters to B, where the small counts are).
 * How the groups are bounded depends on the design:
 * - simple: the labelled papers kept at t are a random sample of all papers kept at t (and the same
 *   below), so each side is one group;
 * - stratified: each vote level was sampled at its own rate, so each level is its own group and
 *   each side's error is split evenly over its levels (Bonferroni); the totals are therefore
 *   weighted by the design (a level's bound is on its own count, whatever its sampling rate);
 * - below_threshold: only the papers below the design's threshold are sampled, which bounds B;
 *   recall then needs the includes the team found reading the kept papers (A known exactly).
 * Thresholds are tested in order from 1 up and the recommendation is the last one certified before
 * the first that is not: recall falls as t rises, so this fixed sequence spends no error on the choice.
 */

/** The papers of one vote level (score null: the job returned no result, read at every threshold). */
export interface VoteLevel {
  score: number | null;
  papers: number;
  labelled: number;
  includes: number;
}

export interface CertificateOptions {
  design: SampleDesign;
  targetRecall: number;
  confidence: number;
  sides: BoundSides;
  repetitions: number;
  /** below_threshold: the threshold whose unread papers were sampled. */
  designThreshold?: number;
  /** below_threshold: included papers the team found reading the papers kept at that threshold. */
  includesRead?: number;
  /** The threshold to plan the labels needed for (the job's own, at least 1). */
  planThreshold?: number;
  /**
   * When the labels are analysed: "anytime" (as they arrive, however often: the anytime-valid
   * sequence) or "once" (one look after the last label of a sample of `sampleSize`: the exact
   * one-look bounds; earlier looks are progress, not a certificate). Anytime unless said.
   */
  plan?: LookPlan;
  /** plan once: the sample's size, the labels the single look is taken at. */
  sampleSize?: number;
  /** plan anytime: labels between looks, if the team said (the plan rounds up to a look). */
  lookEvery?: number;
  /** plan anytime: the labels in the sample's order (without it, each level's labels are taken as spread evenly: for planning). */
  sequence?: readonly { score: number | null; included: boolean }[];
  /** stratified: the papers the sample holds per level (same order as the levels); the labelled ones when unsaid. */
  sampled?: readonly number[];
  /** plan anytime: the betting test (default) or the prior–posterior-ratio bounds with the error split (the method before it, for comparison). */
  sequenceMethod?: "betting" | "ppr";
}

/** Share of the error for the lower bound on the kept includes; the rest bounds the missed ones. */
const KEPT_SHARE = 0.25;
/** A sample that leaves less than this share of the job unread (net of the sample) is no saving: the target counts as not showable. */
export const MIN_NET_WORK_SAVED = 0.05;

export function keptAt(score: number | null, votes: number): boolean {
  return score === null || score >= votes;
}

interface SideBounds {
  low: number;
  high: number;
  estimate: number | null;
  papers: number;
  labelled: number;
}

/** Bounds on the includes among `levels` at error α for each end, as the design samples them (anytime, or exact for one look). */
function sideBounds(levels: readonly VoteLevel[], pooled: boolean, alpha: number, once = false): SideBounds {
  const bound: (group: GroupCount, alpha: number) => CountBounds = once ? exactCountBounds : countBounds;
  const papers = levels.reduce((s, l) => s + l.papers, 0);
  const labelled = levels.reduce((s, l) => s + l.labelled, 0);
  const groups: GroupCount[] = pooled ? [{ papers, labelled, includes: levels.reduce((s, l) => s + l.includes, 0) }] : levels.filter((l) => l.papers > 0);
  let low = 0;
  let high = 0;
  let estimate: number | null = 0;
  for (const group of groups) {
    const b = bound(group, alpha / groups.length);
    low += b.low;
    high += b.high;
    estimate = group.labelled === 0 || estimate === null ? null : estimate + (group.includes * group.papers) / group.labelled;
  }
  return { low, high, estimate: groups.length === 0 ? 0 : estimate, papers, labelled };
}

interface RecallBounds {
  lower: number | null;
  upper: number | null;
  estimate: number | null;
  below: SideBounds;
  missedUpper: number;
}

function recallAt(levels: readonly VoteLevel[], votes: number, options: CertificateOptions, confidence: number): RecallBounds {
  const alpha = 1 - confidence;
  // Two-sided: each of the recall interval's ends gets half the error.
  const tail = options.sides === "two" ? alpha / 2 : alpha;
  const above = levels.filter((l) => keptAt(l.score, votes));
  const belowLevels = levels.filter((l) => !keptAt(l.score, votes));
  const once = options.plan === "once";
  if (options.design === "below_threshold") {
    // The sample is simple within the papers below the design threshold; A is what the team read.
    const below = sideBounds(belowLevels, true, tail, once);
    const missedUpper = below.high;
    const read = options.includesRead;
    if (votes !== options.designThreshold || read === undefined) return { lower: null, upper: null, estimate: null, below, missedUpper };
    const lower = read + missedUpper > 0 ? read / (read + missedUpper) : null;
    const upper = read + below.low > 0 ? read / (read + below.low) : null;
    const estimate = below.estimate !== null && read + below.estimate > 0 ? read / (read + below.estimate) : null;
    return { lower, upper: options.sides === "two" ? upper : 1, estimate, below, missedUpper };
  }
  const pooled = options.design === "simple";
  const keptSide = sideBounds(above, pooled, tail * KEPT_SHARE, once);
  const below = sideBounds(belowLevels, pooled, tail * (1 - KEPT_SHARE), once);
  let lower = keptSide.low + below.high > 0 ? keptSide.low / (keptSide.low + below.high) : 0;
  let missedUpper = below.high;
  if (once && pooled) {
    // One look at a simple sample: recall's exact bound at the whole error, no split; the missed
    // includes get their own exact bound at the same error (each statement holds on its own).
    const kept = { papers: keptSide.papers, labelled: keptSide.labelled, includes: above.reduce((s, l) => s + l.includes, 0) };
    const missed = { papers: below.papers, labelled: below.labelled, includes: belowLevels.reduce((s, l) => s + l.includes, 0) };
    lower = oneLookRecallLower({ kept, below: missed }, tail);
    missedUpper = exactCountBounds(missed, tail).high;
  } else if (!once && (options.sequenceMethod ?? "betting") === "betting") {
    // As labels arrive: the betting test of recall, all strata at once, at the whole error; the
    // missed includes keep their own anytime bound at the same error (each statement holds on its own).
    const strata = levels.map((l, i) => ({ papers: l.papers, sampled: pooled ? l.papers : Math.max(l.labelled, options.sampled?.[i] ?? l.labelled), kept: keptAt(l.score, votes) }));
    const labels = labelSequence(levels, options.sequence);
    lower = labels.some((l) => l.included) ? betRecallLower(strata, labels, tail) : 0;
    if (lower < options.targetRecall && betCertifies(strata, labels, options.targetRecall, tail)) lower = options.targetRecall;
    missedUpper = sideBounds(belowLevels, pooled, tail).high;
  }
  const upper = keptSide.high + below.low > 0 ? keptSide.high / (keptSide.high + below.low) : 1;
  const estimate = keptSide.estimate !== null && below.estimate !== null && keptSide.estimate + below.estimate > 0 ? keptSide.estimate / (keptSide.estimate + below.estimate) : null;
  return { lower, upper: options.sides === "two" ? upper : 1, estimate, below, missedUpper };
}

/**
 * The labels in the order they were given, as strata indices. Without the order (planning on
 * expected counts), each level's includes and excludes are spread evenly through the labels.
 */
function labelSequence(levels: readonly VoteLevel[], sequence: CertificateOptions["sequence"]): SequenceLabel[] {
  const index = new Map(levels.map((l, i) => [l.score, i]));
  if (sequence) return sequence.map((l) => ({ stratum: index.get(l.score)!, included: l.included }));
  const keyed: { key: number; label: SequenceLabel }[] = [];
  levels.forEach((l, stratum) => {
    for (const [count, included] of [
      [l.includes, true],
      [l.labelled - l.includes, false],
    ] as const) {
      for (let j = 0; j < count; j++) keyed.push({ key: (j + 0.5) / count, label: { stratum, included } });
    }
  });
  return keyed.sort((a, b) => a.key - b.key).map((k) => k.label);
}

function thresholdsFor(options: CertificateOptions): number[] {
  if (options.design === "below_threshold") return [options.designThreshold ?? 1];
  return Array.from({ length: options.repetitions }, (_, i) => i + 1);
}

/** The certified recall lower bound per threshold, and the recommendation (fixed-sequence). */
export function certify(levels: readonly VoteLevel[], options: CertificateOptions, confidence: number): { rows: CertifiedThreshold[]; recommended: CertifiedThreshold | null } {
  const total = levels.reduce((s, l) => s + l.papers, 0);
  const rows = thresholdsFor(options).map((votes): CertifiedThreshold => {
    const r = recallAt(levels, votes, options, confidence);
    const kept = total - r.below.papers;
    return {
      votes,
      workload: total > 0 ? kept / total : 0,
      recall_estimate: r.estimate,
      recall_lower: r.lower,
      recall_upper: r.upper,
      papers_below: r.below.papers,
      labelled_below: r.below.labelled,
      missed_estimate: r.below.labelled > 0 ? r.below.estimate : null,
      missed_upper: r.missedUpper,
      net_work_saved: total > 0 ? (r.below.papers - r.below.labelled) / total : 0,
    };
  });
  let recommended: CertifiedThreshold | null = null;
  for (const row of rows) {
    if (row.recall_lower === null || row.recall_lower < options.targetRecall) break;
    recommended = row;
  }
  return { rows, recommended };
}

/**
 * Only the recommended threshold (0 for none), testing in order and stopping at the first threshold
 * not certified: what `certify` recommends, without the rows (for simulations).
 */
export function recommendedThreshold(levels: readonly VoteLevel[], options: CertificateOptions): number {
  let recommended = 0;
  for (const votes of thresholdsFor(options)) {
    if (!certifiesAt(levels, votes, options)) break;
    recommended = votes;
  }
  return recommended;
}

/** Whether threshold `votes` is certified: the one-look test on a simple sample directly (the same answer as its bound, far faster), else the bound. */
function certifiesAt(levels: readonly VoteLevel[], votes: number, options: CertificateOptions): boolean {
  if (options.plan === "once" && options.design === "simple") {
    const side = (kept: boolean) => {
      const group = levels.filter((l) => keptAt(l.score, votes) === kept);
      return { papers: group.reduce((s, l) => s + l.papers, 0), labelled: group.reduce((s, l) => s + l.labelled, 0), includes: group.reduce((s, l) => s + l.includes, 0) };
    };
    const alpha = 1 - options.confidence;
    return oneLookCertifies({ kept: side(true), below: side(false) }, options.sides === "two" ? alpha / 2 : alpha, options.targetRecall);
  }
  const { lower } = recallAt(levels, votes, options, options.confidence);
  return lower !== null && lower >= options.targetRecall;
}

/** Certified upper bound on the included papers below a threshold (what nobody would read). */
export function missedUpperBound(levels: readonly VoteLevel[], votes: number, options: CertificateOptions): number {
  return recallAt(levels, votes, options, options.confidence).missedUpper;
}

export interface Plan {
  needed: number | null;
  feasible: boolean;
  /** The expected levels at the planned size (for what can be shown). */
  at: (n: number) => VoteLevel[];
}

/**
 * Labels the design needs in all: the smallest sample whose expected counts certify the target at
 * the plan threshold. Each level's include share is planned from its labels so far where it has
 * some (the design-weighted estimate), otherwise from the votes alone: a two-class latent model
 * (includes vote include with one rate, excludes with another, votes independent given the class)
 * fitted to the job's vote histogram. Real votes are correlated, so the plan tends to be
 * optimistic; it is a plan, not a promise: the certificate is what counts.
 */
export function labelsNeeded(levels: readonly VoteLevel[], options: CertificateOptions): Plan {
  const total = levels.reduce((s, l) => s + l.papers, 0);
  const votes = Math.max(1, Math.ceil(options.planThreshold ?? options.designThreshold ?? 1));
  const fitted = voteShares(levels, options.repetitions);
  const share = levels.map((l, i) => (l.labelled > 0 ? l.includes / l.labelled : fitted[i]!));
  const at = (n: number): VoteLevel[] => {
    const sizes = allocate(levels, n, options.design, votes);
    return levels.map((l, i) => ({ score: l.score, papers: l.papers, labelled: sizes[i]!, includes: Math.round(sizes[i]! * share[i]!) }));
  };
  const planOptions = { ...options, designThreshold: options.design === "below_threshold" ? (options.designThreshold ?? votes) : undefined };
  const reaches = (n: number) => {
    const expected = at(n);
    const read = options.includesRead ?? Math.round(levels.reduce((s, l, i) => s + (keptAt(l.score, votes) ? l.papers * share[i]! : 0), 0));
    const r = recallAt(expected, votes, { ...planOptions, includesRead: read }, options.confidence);
    return r.lower !== null && r.lower >= options.targetRecall;
  };
  const belowPapers = levels.reduce((s, l) => s + (keptAt(l.score, votes) ? 0 : l.papers), 0);
  const maxSample = options.design === "below_threshold" ? belowPapers : total;
  if (maxSample === 0 || !reaches(maxSample)) return { needed: null, feasible: false, at };
  let lo = 0;
  let hi = maxSample;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (reaches(mid)) hi = mid;
    else lo = mid;
  }
  // Looks every k labels certify at a look: the plan rounds up to one (never past the design's papers).
  const every = options.plan !== "once" && options.lookEvery ? options.lookEvery : 1;
  const needed = Math.min(maxSample, Math.ceil(hi / every) * every);
  const sampledBelow = allocate(levels, needed, options.design, votes).reduce((s, n, i) => s + (keptAt(levels[i]!.score, votes) ? 0 : n), 0);
  return { needed, feasible: belowPapers - sampledBelow >= MIN_NET_WORK_SAVED * total, at };
}

/**
 * P(included | votes) per level from the vote histogram alone, by EM on a two-class binomial
 * mixture: π·Bin(h; R, s) + (1 − π)·Bin(h; R, f). Papers without a result get the overall π.
 */
export function voteShares(levels: readonly { score: number | null; papers: number }[], repetitions: number): number[] {
  const R = repetitions;
  const scored = levels.filter((l) => l.score !== null && l.papers > 0 && R > 0);
  const n = scored.reduce((s, l) => s + l.papers, 0);
  let prior = 0.1;
  let s = 0.8;
  let f = 0.2;
  const posterior = (h: number) => {
    const a = prior * s ** h * (1 - s) ** (R - h);
    const b = (1 - prior) * f ** h * (1 - f) ** (R - h);
    return a + b > 0 ? a / (a + b) : 0;
  };
  for (let iter = 0; iter < 500 && n > 0; iter++) {
    let mass = 0;
    let votesIn = 0;
    let votesOut = 0;
    for (const l of scored) {
      const h = Math.min(R, Math.max(0, l.score!));
      const w = posterior(h) * l.papers;
      mass += w;
      votesIn += w * h;
      votesOut += (l.papers - w) * h;
    }
    const next = { prior: mass / n, s: mass > 0 ? votesIn / (mass * R) : s, f: n - mass > 0 ? votesOut / ((n - mass) * R) : f };
    const moved = Math.abs(next.prior - prior) + Math.abs(next.s - s) + Math.abs(next.f - f);
    prior = Math.min(1 - 1e-9, Math.max(1e-9, next.prior));
    s = Math.min(1 - 1e-9, Math.max(1e-9, next.s));
    f = Math.min(1 - 1e-9, Math.max(1e-9, next.f));
    if (moved < 1e-10) break;
  }
  return levels.map((l) => (l.score === null ? prior : R > 0 ? posterior(Math.min(R, Math.max(0, l.score))) : prior));
}

/**
 * Sample sizes per level for a sample of n: simple in proportion to the levels; stratified at twice
 * the rate below the threshold as above it (misses hide below); below_threshold only below it.
 * Rounded by largest remainder so they add up to n (or to every paper the design can draw).
 */
export function allocate(levels: readonly { score: number | null; papers: number }[], n: number, design: SampleDesign, votes: number): number[] {
  const below = (l: { score: number | null }) => !keptAt(l.score, votes);
  const weight = levels.map((l) => (design === "below_threshold" ? (below(l) ? 1 : 0) : design === "stratified" && below(l) ? 2 : 1));
  const room = levels.reduce((s, l, i) => s + (weight[i]! > 0 ? l.papers : 0), 0);
  let left = Math.min(n, room);
  const sizes = levels.map(() => 0);
  // Fill at the weighted rate; levels that fill up pass their share to the rest (a few rounds at most).
  for (let round = 0; round < levels.length + 1 && left > 0; round++) {
    const open = levels.map((l, i) => (weight[i]! > 0 && sizes[i]! < l.papers ? i : -1)).filter((i) => i >= 0);
    const mass = open.reduce((s, i) => s + weight[i]! * (levels[i]!.papers - sizes[i]!), 0);
    if (mass === 0) break;
    const rate = left / mass;
    const raw = open.map((i) => Math.min(levels[i]!.papers - sizes[i]!, rate * weight[i]! * (levels[i]!.papers - sizes[i]!)));
    const floors = raw.map(Math.floor);
    open.forEach((i, j) => (sizes[i]! += floors[j]!));
    left -= floors.reduce((s, x) => s + x, 0);
    const order = open.map((i, j) => ({ i, frac: raw[j]! - floors[j]! })).sort((a, b) => b.frac - a.frac);
    for (const { i } of order) {
      if (left === 0) break;
      if (sizes[i]! < levels[i]!.papers) {
        sizes[i]!++;
        left--;
      }
    }
  }
  return sizes;
}
