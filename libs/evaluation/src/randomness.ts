import { logGamma } from "./binomial";

/**
 * Whether labelled papers look like a simple random sample of the job, by their vote levels: a χ²
 * test of the labelled count per level against n·N_h/N. Sampling without replacement shrinks the
 * counts' variance by (N − n)/(N − 1), so the statistic is scaled up by its inverse before it is
 * compared with χ² on (levels − 1) degrees of freedom. A sample stratified by vote level, or taken
 * from the top of the ranking, fails it even when its mean votes match the job's.
 */
export function voteLevelChiSquare(levels: readonly { papers: number; labelled: number }[]): { chi2: number; df: number; p_value: number } | null {
  const used = levels.filter((l) => l.papers > 0);
  const N = used.reduce((s, l) => s + l.papers, 0);
  const n = used.reduce((s, l) => s + l.labelled, 0);
  if (used.length < 2 || n < 2 || n >= N) return null;
  let x = 0;
  for (const level of used) {
    const expected = (n * level.papers) / N;
    x += (level.labelled - expected) ** 2 / expected;
  }
  const chi2 = (x * (N - 1)) / (N - n);
  const df = used.length - 1;
  return { chi2, df, p_value: upperGamma(df / 2, chi2 / 2) };
}

/** Q(a, x) = Γ(a, x) / Γ(a), the regularized upper incomplete gamma function (bounded iterations). */
export function upperGamma(a: number, x: number): number {
  if (x <= 0) return 1;
  const front = Math.exp(a * Math.log(x) - x - logGamma(a));
  if (x < a + 1) {
    // Series for P(a, x).
    let term = 1 / a;
    let sum = term;
    for (let k = 1; k < 10_000; k++) {
      term *= x / (a + k);
      sum += term;
      if (term < sum * 1e-16) break;
    }
    return Math.max(0, 1 - front * sum);
  }
  // Continued fraction for Q(a, x) (modified Lentz).
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let f = d;
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    f *= step;
    if (Math.abs(step - 1) < 1e-16) break;
  }
  return Math.min(1, front * f);
}
