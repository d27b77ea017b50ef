import { logHypergeometric, type CountBounds, type GroupCount } from "./sequence";

/**
 * Exact bounds for ONE planned look: the labels are analysed once, after the last label of a
 * sample whose size was fixed before labelling. Tighter than the anytime sequences (./sequence,
 * ./betting), and wrong when used again and again as labels arrive: the certificate answers
 * earlier looks of a sample planned this way as progress, not as a certificate.
 */

/**
 * P(X ≥ x) for X ~ Hyp(m draws from K papers holding A includes), summed only until it passes `stop`.
 * One exponential a tail: each term is the one before times the ratio of consecutive hypergeometric
 * probabilities (the bound asks for tens of thousands of tails of hundreds of terms on a large job,
 * which cost seconds with an exponential a term), and it ends where the rest cannot change the sum.
 * The running terms are kept relative to the first and rescaled before they could overflow.
 */
export function upperTail(x: number, K: number, A: number, m: number, stop = Infinity): number {
  const first = Math.max(x, m - (K - A), 0);
  const last = Math.min(m, A);
  if (first > last) return 0;
  let logScale = logHypergeometric(first, K, A, m);
  let limit = stop / Math.exp(logScale);
  let term = 1;
  let sum = 1;
  for (let i = first; i < last && sum <= limit; i++) {
    const ratio = ((A - i) * (m - i)) / ((i + 1) * (K - A - m + i + 1));
    term *= ratio;
    sum += term;
    // The ratios only fall (the hypergeometric is log-concave): once below 1, what is left is under
    // term · ratio / (1 − ratio), and once that is below the sum's last bit the tail is summed.
    if (ratio < 1 && (term * ratio) / (1 - ratio) < sum * Number.EPSILON) break;
    if (sum > 1e200) {
      logScale += Math.log(sum);
      term /= sum;
      limit /= sum;
      sum = 1;
    }
  }
  return Math.exp(logScale + Math.log(sum));
}

/** P(X ≤ x) for X ~ Hyp(n draws from N papers holding K includes). */
export function lowerTail(x: number, N: number, K: number, n: number): number {
  let p = 0;
  for (let i = Math.max(0, n - (N - K)); i <= x; i++) p += Math.exp(logHypergeometric(i, N, K, n));
  return p;
}

/**
 * One-sided exact bounds on a group's include count from one simple random sample of it, each end
 * erring with probability at most α: the low end is the smallest K whose upper tail at the count
 * seen exceeds α, the high end the largest whose lower tail does (the tails are monotone in K).
 */
export function exactCountBounds(group: GroupCount, alpha: number): CountBounds {
  const { papers: N, labelled: n, includes: k } = group;
  if (n === 0) return { low: 0, high: N };
  if (n === N) return { low: k, high: k };
  const lowest = k;
  const highest = N - (n - k);
  // Largest K with P(X ≤ k | K) > α (decreasing in K).
  let lo = lowest;
  let hi = highest + 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (lowerTail(k, N, mid, n) > alpha) lo = mid;
    else hi = mid;
  }
  const high = lo;
  // Smallest K with P(X ≥ k | K) > α (increasing in K).
  let a = lowest - 1;
  let b = highest;
  while (b - a > 1) {
    const mid = (a + b) >> 1;
    if (upperTail(k, N, mid, n, alpha) > alpha) b = mid;
    else a = mid;
  }
  return { low: b, high };
}

/** A simple random sample's labels on the two sides of a threshold. */
export interface SplitSample {
  /** Papers kept at the threshold, of them labelled, of those included. */
  kept: GroupCount;
  /** Papers below it, the same. */
  below: GroupCount;
}

/**
 * The exact one-look lower bound on recall A / (A + B) from a simple random sample, one-sided at
 * error α. Given the number m of included papers the sample holds, they are a simple random sample
 * of the K = A + B included papers, so the kept ones among them follow Hyp(m draws from K holding
 * A): for every K the smallest A whose upper tail at the count seen exceeds α stays in the
 * confidence set, and the bound is the least A / K over the set. As K grows the hypergeometric tends
 * to the binomial, so the bound is never below Clopper–Pearson's on the includes (59 of 59 kept:
 * 0.05^(1/59) = 0.9505) and is higher when the job is small. Counts the labels rule out (more
 * includes on a side than its unlabelled papers allow) never enter the set.
 */
export function oneLookRecallLower(sample: SplitSample, alpha: number): number {
  const a = sample.kept.includes;
  const b = sample.below.includes;
  const m = a + b;
  if (m === 0) return 0;
  const aMax = sample.kept.papers - (sample.kept.labelled - a);
  const bMax = sample.below.papers - (sample.below.labelled - b);
  let lowest = Infinity;
  // A*(K), the smallest A in the set, never falls as K grows and rises by at most one per step
  // (one more paper holding no include lowers the tail; one more holding an include cannot), so
  // each K costs one or two tails of at most b + 1 terms.
  let floor = a;
  for (let K = Math.max(m, a + b); K <= aMax + bMax; K++) {
    let A = Math.max(floor, a, K - bMax);
    const top = Math.min(aMax, K - b);
    while (A <= top && upperTail(a, K, A, m, alpha) <= alpha) A++;
    if (A > top) continue;
    floor = A;
    lowest = Math.min(lowest, A / K);
  }
  return lowest === Infinity ? 1 : lowest;
}

/**
 * Whether the one-look bound reaches τ (oneLookRecallLower(sample, α) ≥ τ), without computing it:
 * every K in the range must leave no A < τK in the set, and the upper tail rises with A, so only
 * the largest such A is tested. K runs down from the largest, where the bound is least when no
 * sampled include is missed, so a look that does not certify is answered after a few tails (the
 * simulations ask at every look).
 */
export function oneLookCertifies(sample: SplitSample, alpha: number, tau: number): boolean {
  const a = sample.kept.includes;
  const b = sample.below.includes;
  const m = a + b;
  if (m === 0) return tau <= 0;
  const aMax = sample.kept.papers - (sample.kept.labelled - a);
  const bMax = sample.below.papers - (sample.below.labelled - b);
  for (let K = aMax + bMax; K >= m; K--) {
    const low = Math.max(a, K - bMax);
    const A = Math.min(aMax, K - b, Math.ceil(tau * K) - 1);
    if (A >= low && upperTail(a, K, A, m, alpha) > alpha) return false;
  }
  return true;
}
