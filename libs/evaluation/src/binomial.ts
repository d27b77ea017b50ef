/**
 * Exact (Clopper–Pearson) binomial intervals. The bounds are quantiles of beta distributions,
 * found by bisection on the regularized incomplete beta function; each bisection returns the end
 * of its bracket on the conservative side, so a bound is never tighter than the exact one.
 */

import type { ConfidenceInterval } from "@litrev/contracts";

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9: about 15 significant digits). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  const z = x - 1;
  let a = c[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += c[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 ≤ x ≤ 1. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The continued fraction converges fast on this side of the mean; use the symmetry otherwise.
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

/** The continued fraction of I_x(a, b), evaluated by the modified Lentz method (bounded iterations). */
function betaFraction(x: number, a: number, b: number): number {
  let c = 1;
  let d = 1 / lentzGuard(1 - ((a + b) * x) / (a + 1));
  let f = d;
  // Two Lentz steps an iteration, inline: the bounds call this thousands of times a validation.
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    const even = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 / lentzGuard(1 + even * d);
    c = lentzGuard(1 + even / c);
    f *= d * c;
    const oddTerm = -((a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 / lentzGuard(1 + oddTerm * d);
    c = lentzGuard(1 + oddTerm / c);
    const odd = d * c;
    f *= odd;
    if (Math.abs(odd - 1) < 1e-15) break;
  }
  return f;
}

/** Keeps a Lentz denominator off zero. */
function lentzGuard(v: number): number {
  return Math.abs(v) < 1e-300 ? 1e-300 : v;
}

/**
 * The p-quantile of Beta(a, b) by bisection (the CDF is monotone in x). `side` says which end of the
 * final bracket to return: "low" never exceeds the exact quantile, "high" never falls below it.
 */
export function betaQuantile(p: number, a: number, b: number, side: "low" | "high"): number {
  let lo = 0;
  let hi = 1;
  // 200 halvings reach the spacing of doubles near any quantile in (0, 1); stop once the bracket cannot shrink.
  for (let i = 0; i < 200; i++) {
    const mid = (lo + hi) / 2;
    if (mid <= lo || mid >= hi) break;
    if (incompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return side === "low" ? lo : hi;
}

/**
 * Clopper–Pearson interval for `successes` of `trials` at two-sided `confidence`: each bound leaves
 * at most (1 − confidence) / 2 on its side. The lower bound p_L solves P(X ≥ x | p_L) = α/2 and the
 * upper p_U solves P(X ≤ x | p_U) = α/2, i.e. beta quantiles.
 */
export function clopperPearson(successes: number, trials: number, confidence = 0.95): ConfidenceInterval {
  if (!(trials > 0) || successes < 0 || successes > trials) throw new RangeError(`need 0 ≤ successes ≤ trials and trials > 0, got ${successes} of ${trials}`);
  const tail = (1 - confidence) / 2;
  const low = successes === 0 ? 0 : betaQuantile(tail, successes, trials - successes + 1, "low");
  const high = successes === trials ? 1 : betaQuantile(1 - tail, successes + 1, trials - successes, "high");
  return { low, high };
}
