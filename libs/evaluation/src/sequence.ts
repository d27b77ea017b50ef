/**
 * Anytime-valid bounds on how many included papers a finite group of papers holds, from a sample
 * of it labelled in a uniformly random order (sampling without replacement).
 *
 * The method is the prior–posterior-ratio confidence sequence of Waudby-Smith and Ramdas
 * ("Confidence sequences for sampling without replacement", NeurIPS 2020). For a group of N papers
 * of which K are included, after n labels of which k are includes:
 *
 *   keep K  ⇔  Hyp(k; N, K, n) > α · BetaBin(k; n, ½, ½)
 *
 * Hyp is the exact hypergeometric probability of k includes in n draws when the group holds K;
 * BetaBin is the same probability averaged over a Beta(½, ½)-binomial prior on K (the prior's
 * marginal is the beta-binomial). For the true K the ratio BetaBin/Hyp is a nonnegative martingale
 * with mean 1 as labels arrive, so by Ville's inequality it ever exceeds 1/α with probability at
 * most α: the bounds hold simultaneously at every n, however often and whenever anyone looks.
 * The price against a bound for one planned look is a wider interval (about ln n + 1 more in
 * the exponent); the bench measures what it costs in labels.
 */

/** ln Γ(i + ½) and ln i! tables, grown on demand (exact sums, no approximation error to speak of). */
const logFactorials: number[] = [0];
const logHalfGammas: number[] = [Math.log(Math.sqrt(Math.PI))];

function logFactorial(i: number): number {
  for (let j = logFactorials.length; j <= i; j++) logFactorials.push(logFactorials[j - 1]! + Math.log(j));
  return logFactorials[i]!;
}

/** ln Γ(i + ½) for integer i ≥ 0: Γ(i + ½) = Γ(i − ½)(i − ½). */
function logHalfGamma(i: number): number {
  for (let j = logHalfGammas.length; j <= i; j++) logHalfGammas.push(logHalfGammas[j - 1]! + Math.log(j - 0.5));
  return logHalfGammas[i]!;
}

function logChoose(n: number, k: number): number {
  return logFactorial(n) - logFactorial(k) - logFactorial(n - k);
}

/** ln Hyp(k; N, K, n): k includes among n draws without replacement from N papers holding K includes. */
export function logHypergeometric(k: number, N: number, K: number, n: number): number {
  if (k > K || n - k > N - K) return -Infinity;
  return logChoose(K, k) + logChoose(N - K, n - k) - logChoose(N, n);
}

/** ln BetaBin(k; n, ½, ½) = ln C(n, k) + ln B(k + ½, n − k + ½) − ln B(½, ½). */
function logPriorMarginal(k: number, n: number): number {
  return logChoose(n, k) + logHalfGamma(k) + logHalfGamma(n - k) - logFactorial(n) - Math.log(Math.PI);
}

export interface GroupCount {
  /** Papers in the group. */
  papers: number;
  /** Of them labelled, in the group's random order. */
  labelled: number;
  /** Of the labelled, included. */
  includes: number;
}

export interface CountBounds {
  low: number;
  high: number;
}

/** Bounds already computed, per α, keyed by N·2³² + n·2¹⁶ + k (each below 2¹⁶: a job holds at most 50,000 papers). */
const cache = new Map<number, Map<number, CountBounds>>();
const CACHE_LIMIT = 200_000;

/**
 * The set of group include counts K still consistent with the labels at error α (0 < α < 1): an
 * interval [low, high] (the hypergeometric likelihood is log-concave in K), always holding the
 * labelled includes and never more than the group minus its labelled excludes. Used one-sided,
 * each end alone errs with probability at most α.
 */
export function countBounds(group: GroupCount, alpha: number): CountBounds {
  const { papers: N, labelled: n, includes: k } = group;
  if (!(n >= 0 && k >= 0 && k <= n && n <= N)) throw new RangeError(`need 0 ≤ includes ≤ labelled ≤ papers, got ${k} ≤ ${n} ≤ ${N}`);
  if (n === 0) return { low: 0, high: N };
  if (n === N) return { low: k, high: k };
  let byAlpha = cache.get(alpha);
  if (!byAlpha) cache.set(alpha, (byAlpha = new Map()));
  const key = N * 4294967296 + n * 65536 + k;
  const known = byAlpha.get(key);
  if (known) return known;
  const floor = Math.log(alpha) + logPriorMarginal(k, n);
  const inside = (K: number) => logHypergeometric(k, N, K, n) > floor;
  // The maximum-likelihood K is ⌊(N + 1)k / n⌋ (clamped to the feasible range); it is always inside.
  const lowest = k;
  const highest = N - (n - k);
  const mode = Math.min(highest, Math.max(lowest, Math.floor(((N + 1) * k) / n)));
  // Largest K ≥ mode inside, and smallest K ≤ mode inside, by bisection on the monotone flanks.
  let lo = mode;
  let hi = highest;
  if (inside(hi)) lo = hi;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (inside(mid)) lo = mid;
    else hi = mid;
  }
  const high = lo;
  let a = lowest;
  let b = mode;
  if (inside(a)) b = a;
  while (b - a > 1) {
    const mid = (a + b) >> 1;
    if (inside(mid)) b = mid;
    else a = mid;
  }
  const bounds = { low: b, high };
  if (byAlpha.size >= CACHE_LIMIT) byAlpha.clear();
  byAlpha.set(key, bounds);
  return bounds;
}
