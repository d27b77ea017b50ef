import { incompleteBeta } from "./binomial";
import { generator } from "./random";
import { RecallBet } from "./betting";
import { lowerTail } from "./one-look";
import { keptAt, labelsNeeded, missedUpperBound, recommendedThreshold, type VoteLevel } from "./certificate";

/**
 * Error rates of a recall-certification rule by simulation: a known job (papers and includes per
 * vote level), a sample drawn by a design and labelled in order, the rule asked after every
 * `lookEvery` labels. A run errs when any look recommends a threshold whose TRUE recall is below
 * the target (the team may stop at any look), or when any look's missed-include bound falls below
 * the true count at the checked threshold. Used by bench/validation.ts and its tests.
 */

export interface Scenario {
  name: string;
  /** Per vote level 0…R: papers and, of them, included. */
  levels: { papers: number; includes: number }[];
  targetRecall: number;
  confidence: number;
  design: "simple" | "stratified";
  /** Stratified: relative sampling rate per level. */
  rates?: number[];
  sampleSize: number;
  lookEvery: number;
  /** The threshold whose missed-include bound is checked. */
  checkAt: number;
}

export interface Rule {
  name: string;
  /** The recommended threshold (0 for none), and whether the missed-include upper bound at `checkAt` is below `truthMissed`. */
  answer(levels: readonly VoteLevel[], scenario: Scenario, truthMissed: number): { votes: number; missedBelowTruth: boolean };
  /** A rule that follows the labels' order: a new run's sample (papers per level), then each label as it comes. */
  start?(scenario: Scenario, sampled: readonly number[]): void;
  observe?(level: number, included: boolean): void;
  /** Looks only at this many labels (a plan for one look); every `lookEvery` labels otherwise. */
  onlyAt?(scenario: Scenario): number;
  /** Ends a run at its first certifying look (a rule measured for its labels only, not its errors). */
  untilCertified?: boolean;
}

export interface ErrorRates {
  runs: number;
  /** Runs in which some look recommended a threshold above 0. */
  certified: number;
  /** Runs in which some look recommended a threshold whose true recall is below the target. */
  wrong: number;
  /** Runs in which some look's missed-include bound was below the true count. */
  missedWrong: number;
  /** Labels at the first certifying look, summed over the runs that certified (for the mean). */
  labelsAtCertification: number;
  /** Labels at the first certifying look of each run that certified (for the median and the 90th percentile). */
  labels: number[];
}

export function trueRecall(levels: Scenario["levels"], votes: number): number {
  const all = levels.reduce((s, l) => s + l.includes, 0);
  const kept = levels.reduce((s, l, score) => s + (score >= votes ? l.includes : 0), 0);
  return all > 0 ? kept / all : 1;
}

/** Sample sizes per level for a stratified design (largest remainder, capped at each level). */
function stratifiedSizes(scenario: Scenario): number[] {
  const rates = scenario.rates ?? scenario.levels.map(() => 1);
  const mass = scenario.levels.reduce((s, l, i) => s + rates[i]! * l.papers, 0);
  const raw = scenario.levels.map((l, i) => Math.min(l.papers, (scenario.sampleSize * rates[i]! * l.papers) / mass));
  const sizes = raw.map(Math.floor);
  let left = Math.min(scenario.sampleSize, scenario.levels.reduce((s, l) => s + l.papers, 0)) - sizes.reduce((s, n) => s + n, 0);
  const order = raw.map((r, i) => ({ i, f: r - Math.floor(r) })).sort((a, b) => b.f - a.f);
  for (const { i } of order) {
    if (left <= 0) break;
    if (sizes[i]! < scenario.levels[i]!.papers) {
      sizes[i]!++;
      left--;
    }
  }
  return sizes;
}

/** Index of the category drawn from counts (without replacement: the caller decrements). */
function draw(counts: Int32Array, total: number, next: () => number): number {
  let u = Math.floor(next() * total);
  for (let j = 0; j < counts.length; j++) {
    u -= counts[j]!;
    if (u < 0) return j;
  }
  return counts.length - 1;
}

export function errorRates(scenario: Scenario, rule: Rule, runs: number, seed = 1): ErrorRates {
  const R = scenario.levels.length;
  const truthMissed = scenario.levels.reduce((s, l, score) => s + (score < scenario.checkAt ? l.includes : 0), 0);
  const wrongAt = scenario.levels.map((_, votes) => votes >= 1 && trueRecall(scenario.levels, votes) < scenario.targetRecall);
  const sizes = scenario.design === "stratified" ? stratifiedSizes(scenario) : null;
  const result: ErrorRates = { runs, certified: 0, wrong: 0, missedWrong: 0, labelsAtCertification: 0, labels: [] };
  const only = rule.onlyAt?.(scenario);
  // Categories 2h (level h, included) and 2h + 1 (level h, excluded).
  const counts = new Int32Array(2 * R);
  const levels: VoteLevel[] = scenario.levels.map((l, score) => ({ score, papers: l.papers, labelled: 0, includes: 0 }));
  for (let run = 0; run < runs; run++) {
    const next = generator(seed * 1_000_003 + run);
    // The pool the labels come from, in random order: every paper (simple) or the drawn stratified sample.
    for (let h = 0; h < R; h++) {
      const level = scenario.levels[h]!;
      let includes = level.includes;
      let size = level.papers;
      if (sizes) {
        // The level's sampled includes: n_h draws without replacement from its papers.
        let left = level.includes;
        includes = 0;
        for (let i = 0; i < sizes[h]!; i++) {
          if (next() * (level.papers - i) < left) {
            includes++;
            left--;
          }
        }
        size = sizes[h]!;
      }
      counts[2 * h] = includes;
      counts[2 * h + 1] = size - includes;
      levels[h]!.labelled = 0;
      levels[h]!.includes = 0;
    }
    let pool = counts.reduce((s, c) => s + c, 0);
    const n = Math.min(only ?? scenario.sampleSize, pool);
    rule.start?.(scenario, scenario.levels.map((l, h) => (sizes ? sizes[h]! : l.papers)));
    let certified = false;
    let wrong = false;
    let missedWrong = false;
    for (let i = 1; i <= n; i++) {
      const j = draw(counts, pool, next);
      counts[j]!--;
      pool--;
      const level = levels[j >> 1]!;
      level.labelled++;
      if ((j & 1) === 0) level.includes++;
      rule.observe?.(j >> 1, (j & 1) === 0);
      if (only !== undefined ? i !== n : i % scenario.lookEvery !== 0 && i !== n) continue;
      const { votes, missedBelowTruth } = rule.answer(levels, scenario, truthMissed);
      if (votes >= 1 && !certified) {
        certified = true;
        result.labelsAtCertification += i;
        result.labels.push(i);
      }
      if (wrongAt[votes]) wrong = true;
      if (missedBelowTruth) missedWrong = true;
      if ((wrong && missedWrong) || (certified && rule.untilCertified)) break;
    }
    if (certified) result.certified++;
    if (wrong) result.wrong++;
    if (missedWrong) result.missedWrong++;
  }
  return result;
}

const optionsOf = (scenario: Scenario, levels: readonly VoteLevel[]) => ({
  design: scenario.design,
  targetRecall: scenario.targetRecall,
  confidence: scenario.confidence,
  sides: "one" as const,
  repetitions: levels.length - 1,
});

/** Today's sequence before the betting test: prior–posterior-ratio bounds on the kept and missed includes, the error split, strata by Bonferroni. */
export const certificateRule: Rule = {
  name: "prior–posterior ratio",
  answer(levels, scenario, truthMissed) {
    const options = { ...optionsOf(scenario, levels), sequenceMethod: "ppr" as const };
    return { votes: recommendedThreshold(levels, options), missedBelowTruth: missedUpperBound(levels, scenario.checkAt, options) < truthMissed };
  },
};

/** The service's anytime sequence: the betting test of recall across strata (./betting), label by label, thresholds in order. */
export function bettingRule(): Rule {
  let bets: RecallBet[] = [];
  return {
    name: "betting",
    start(scenario, sampled) {
      const R = scenario.levels.length - 1;
      bets = Array.from({ length: R }, (_, i) => new RecallBet(scenario.levels.map((l, h) => ({ papers: l.papers, sampled: sampled[h]!, kept: h >= i + 1 })), scenario.targetRecall));
    },
    observe(level, included) {
      for (const bet of bets) bet.push(level, included);
    },
    answer(levels, scenario, truthMissed) {
      let votes = 0;
      while (votes < bets.length && bets[votes]!.wealth() >= 1 / (1 - scenario.confidence)) votes++;
      const options = optionsOf(scenario, levels);
      return { votes, missedBelowTruth: missedUpperBound(levels, scenario.checkAt, { ...options, sequenceMethod: "ppr" }) < truthMissed };
    },
  };
}

/**
 * A plan for one look, sized by the service's plan from the job's votes (its labels_needed for plan
 * once), looked at once when that many are labelled, with the exact one-look bounds.
 */
export const oneLookRule: Rule = {
  name: "one look",
  onlyAt(scenario) {
    const levels = scenario.levels.map((l, score) => ({ score, papers: l.papers, labelled: 0, includes: 0 }));
    return labelsNeeded(levels, { ...optionsOf(scenario, levels), plan: "once", planThreshold: 1 }).needed ?? scenario.sampleSize;
  },
  answer(levels, scenario, truthMissed) {
    const labelled = levels.reduce((s, l) => s + l.labelled, 0);
    const options = { ...optionsOf(scenario, levels), plan: "once" as const, sampleSize: labelled };
    return { votes: recommendedThreshold(levels, options), missedBelowTruth: missedUpperBound(levels, scenario.checkAt, options) < truthMissed };
  },
};

/**
 * One look at every look's size, as if the sample had been planned for exactly that many labels:
 * the first look it certifies at is the smallest single-look sample that would have certified the
 * run, so the median over runs is about the size a team must plan for even odds of certifying (no
 * plan does better without knowing the labels). Asked again and again it is no certificate: it
 * measures labels only, and ends each run at its first certification.
 */
export const oneLookAnySizeRule: Rule = {
  name: "one look, smallest size",
  untilCertified: true,
  answer(levels, scenario) {
    const labelled = levels.reduce((s, l) => s + l.labelled, 0);
    return { votes: recommendedThreshold(levels, { ...optionsOf(scenario, levels), plan: "once", sampleSize: labelled }), missedBelowTruth: false };
  },
};

/**
 * A naive rule, as the validation route answered before: a fresh Clopper–Pearson bound at every look
 * on the labelled includes as if they were one simple random sample (unweighted), one-sided at the
 * scenario's confidence, the strictest threshold reaching the target; the missed includes below as
 * the labelled ones plus the rest at the upper Clopper–Pearson rate. `slack` multiplies its error
 * (2 = twice too permissive), to show what the bench can tell apart.
 */
export function naiveRule(slack = 1): Rule {
  return {
    name: slack === 1 ? "naive" : `naive×${slack}`,
    answer(levels, scenario, truthMissed) {
      const alpha = (1 - scenario.confidence) * slack;
      // The one-sided Clopper–Pearson lower bound of k of n reaches τ exactly when P(X ≥ k | n, τ) = I_τ(k, n − k + 1) ≤ α:
      // one tail probability per question instead of a bisection for the bound.
      let votes = 0;
      for (let t = 1; t < levels.length; t++) {
        let kept = 0;
        let missed = 0;
        for (const l of levels) {
          if (keptAt(l.score, t)) kept += l.includes;
          else missed += l.includes;
        }
        if (kept > 0 && incompleteBeta(scenario.targetRecall, kept, missed + 1) <= alpha) votes = t;
      }
      // found + rest·p_U < truth exactly when p_U < p* = (truth − found) / rest, i.e. when P(X ≤ found | labelled, p*) < α.
      const below = levels.filter((l) => !keptAt(l.score, scenario.checkAt));
      const papers = below.reduce((s, l) => s + l.papers, 0);
      const labelled = below.reduce((s, l) => s + l.labelled, 0);
      const found = below.reduce((s, l) => s + l.includes, 0);
      const rest = papers - labelled;
      let missedBelowTruth: boolean;
      if (labelled === 0 || rest === 0) missedBelowTruth = found + rest < truthMissed;
      else {
        const p = (truthMissed - found) / rest;
        missedBelowTruth = p > 1 || (p > 0 && found < labelled && 1 - incompleteBeta(p, found + 1, labelled - found) < alpha);
      }
      return { votes, missedBelowTruth };
    },
  };
}

/**
 * A job of `papers` at `prevalence`, votes from R repetitions at the screener's per-vote sensitivity
 * and specificity (expected counts), with the includes arranged so that recall at threshold 2 is just
 * below the target (the fewest misses that put it there sit at level 1) and recall at 1 is complete.
 */
export function jobJustBelow(papers: number, prevalence: number, target: number, repetitions = 5, sensitivity = 0.9, specificity = 0.8): Scenario["levels"] {
  const K = Math.round(papers * prevalence);
  // The fewest misses that put recall below the target (the epsilon absorbs (1 − 0.9)·K = 49.999…).
  const misses = Math.floor((1 - target) * K + 1e-9) + 1;
  const binom = (p: number) => Array.from({ length: repetitions + 1 }, (_, h) => choose(repetitions, h) * p ** h * (1 - p) ** (repetitions - h));
  const spread = (total: number, weights: number[]) => {
    const mass = weights.reduce((s, w) => s + w, 0);
    const raw = weights.map((w) => (total * w) / mass);
    const out = raw.map(Math.floor);
    let left = total - out.reduce((s, x) => s + x, 0);
    for (const { i } of raw.map((r, i) => ({ i, f: r - Math.floor(r) })).sort((a, b) => b.f - a.f)) {
      if (left-- <= 0) break;
      out[i]!++;
    }
    return out;
  };
  const includes = spread(K - misses, binom(sensitivity).map((w, h) => (h >= 2 ? w : 0)));
  includes[1] = misses;
  const excludes = spread(papers - K, binom(1 - specificity));
  return includes.map((k, h) => ({ papers: k + excludes[h]!, includes: k }));
}

function choose(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}

/**
 * At or under the nominal error over all runs, among the runs that certified, and for the
 * missed-include bound; and certifying in at least half the runs, so a rule cannot pass by declining.
 */
export function meetsNominal(rates: ErrorRates, nominal: number): boolean {
  const { runs, certified, wrong, missedWrong } = rates;
  return wrong / runs <= nominal && missedWrong / runs <= nominal && certified >= runs / 2 && wrong / certified <= nominal;
}

const scenario = (name: string, papers: number, prevalence: number, rest: Omit<Scenario, "name" | "levels" | "confidence" | "checkAt" | "targetRecall"> & { targetRecall?: number }): Scenario => {
  const targetRecall = rest.targetRecall ?? 0.95;
  return { name, levels: jobJustBelow(papers, prevalence, targetRecall), confidence: 0.95, checkAt: 2, ...rest, targetRecall };
};
/** Stratified by vote level at twice the rate below threshold 2; include-enriched at four times the rate at and above it. */
const BELOW_2X = [2, 2, 1, 1, 1, 1];
const ENRICHED_4X = [1, 1, 4, 4, 4, 4];
/** The bench's scenarios: the designs, look intervals, sampling fractions and prevalences that break naive rules. */
export const BENCH_SCENARIOS: Scenario[] = [
  scenario("simple, looks/25, 50%, p 10%", 5_000, 0.1, { design: "simple", sampleSize: 2_500, lookEvery: 25 }),
  scenario("simple, looks/50, 50%, p 10%", 5_000, 0.1, { design: "simple", sampleSize: 2_500, lookEvery: 50 }),
  scenario("simple, looks/100, 50%, p 10%", 5_000, 0.1, { design: "simple", sampleSize: 2_500, lookEvery: 100 }),
  scenario("simple, looks/25, 20%, p 10%, 90%", 5_000, 0.1, { design: "simple", sampleSize: 1_000, lookEvery: 25, targetRecall: 0.9 }),
  scenario("simple, looks/50, 80%, p 2%", 5_000, 0.02, { design: "simple", sampleSize: 4_000, lookEvery: 50 }),
  scenario("simple, looks/100, 80%, p 0.5%, 80%", 10_000, 0.005, { design: "simple", sampleSize: 8_000, lookEvery: 100, targetRecall: 0.8 }),
  scenario("stratified 2:1, looks/25, 50%, p 10%", 5_000, 0.1, { design: "stratified", rates: BELOW_2X, sampleSize: 2_500, lookEvery: 25 }),
  scenario("stratified 2:1, looks/50, 80%, p 5%", 5_000, 0.05, { design: "stratified", rates: BELOW_2X, sampleSize: 4_000, lookEvery: 50 }),
  scenario("enriched 1:4, looks/25, 40%, p 10%, 90%", 5_000, 0.1, { design: "stratified", rates: ENRICHED_4X, sampleSize: 2_000, lookEvery: 25, targetRecall: 0.9 }),
  scenario("enriched 1:4, looks/50, 60%, p 10%, 90%", 5_000, 0.1, { design: "stratified", rates: ENRICHED_4X, sampleSize: 3_000, lookEvery: 50, targetRecall: 0.9 }),
];

/**
 * buscar's hypergeometric stopping rule (Callaghan and Müller-Hansen 2020, as EPPI-Reviewer ships
 * it), at one threshold: the team reads every paper kept there (finding A includes), then labels the
 * papers below it in a random order, and after each label tests H0 "recall of the includes found so
 * far is below τ": with k includes among n labelled of the N below, the fewest includes the papers
 * below must hold for that is K = ⌊(A + k)/τ − A⌋ + 1, and it stops when P(X ≤ k | N, K, n) < α.
 * A run is wrong when it stops with (A + k)/(all includes) below τ. Labels: the papers labelled below.
 */
export function buscarRates(scenario: Scenario, threshold: number, runs: number, seed = 1): { runs: number; certified: number; wrong: number; labels: number[] } {
  const alpha = 1 - scenario.confidence;
  const tau = scenario.targetRecall;
  const A = scenario.levels.reduce((s, l, h) => s + (h >= threshold ? l.includes : 0), 0);
  const N = scenario.levels.reduce((s, l, h) => s + (h < threshold ? l.papers : 0), 0);
  const B = scenario.levels.reduce((s, l, h) => s + (h < threshold ? l.includes : 0), 0);
  const result = { runs, certified: 0, wrong: 0, labels: [] as number[] };
  for (let run = 0; run < runs; run++) {
    const next = generator(seed * 1_000_003 + run);
    let left = B;
    let k = 0;
    for (let n = 1; n <= N; n++) {
      if (next() * (N - n + 1) < left) {
        k++;
        left--;
      }
      const K = Math.floor((A + k) / tau - A) + 1;
      if (lowerTail(k, N, K, n) < alpha) {
        result.certified++;
        result.labels.push(n);
        if ((A + k) / (A + B) < tau) result.wrong++;
        break;
      }
    }
  }
  return result;
}

/** Looks after every label, and a stratified job whose levels hold a handful of papers each (at 95%, which no sample of it can show, and at 80%). */
export const EVERY_LABEL_SCENARIOS: Scenario[] = [
  scenario("simple, looks/1, 50%, p 10%", 2_000, 0.1, { design: "simple", sampleSize: 1_000, lookEvery: 1 }),
  scenario("stratified 2:1, looks/1, tiny strata, p 3%", 600, 0.03, { design: "stratified", rates: BELOW_2X, sampleSize: 450, lookEvery: 1 }),
  // The same job at a target its 18 includes can show, so that its error is measured on runs that certify (levels of 8 and 9 papers).
  scenario("stratified 2:1, looks/1, tiny strata, p 3%, 80%", 600, 0.03, { design: "stratified", rates: BELOW_2X, sampleSize: 450, lookEvery: 1, targetRecall: 0.8 }),
];

/** Synthetic jobs across sizes and prevalences (simple sample, a look every 25 labels, up to 60% of the job). */
export const SYNTHETIC_SCENARIOS: Scenario[] = [2_000, 10_000, 50_000].flatMap((papers) =>
  [0.01, 0.03, 0.1].map((prevalence) =>
    scenario(`synthetic N ${papers.toLocaleString("en")}, p ${prevalence * 100}%`, papers, prevalence, { design: "simple", sampleSize: Math.round(papers * 0.6), lookEvery: 25 }),
  ),
);
