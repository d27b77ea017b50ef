import { describe, expect, it } from "vitest";
import { clopperPearson, incompleteBeta } from "./binomial";

/** P(X ≤ k) for X ~ Binomial(n, p), summed term by term in log space (independent of the code under test). */
function binomialCdf(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  const logFactorial = [0];
  for (let i = 1; i <= n; i++) logFactorial.push(logFactorial[i - 1]! + Math.log(i));
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    const logTerm = logFactorial[n]! - logFactorial[i]! - logFactorial[n - i]! + (i === 0 ? 0 : i * Math.log(p)) + (n - i === 0 ? 0 : (n - i) * Math.log1p(-p));
    sum += Math.exp(logTerm);
  }
  return Math.min(1, sum);
}

describe("Clopper–Pearson intervals", () => {
  const cases: [number, number, number][] = [
    [0, 1, 0.95],
    [1, 1, 0.95],
    [3, 4, 0.9],
    [8, 8, 0.95],
    [15, 16, 0.95],
    [37, 40, 0.99],
    [50, 100, 0.95],
    [1, 250, 0.95],
    [498, 500, 0.8],
    [1990, 2000, 0.95],
  ];
  it.each(cases)("%i of %i at %f: each bound leaves exactly α/2 in its binomial tail", (x, n, confidence) => {
    const tail = (1 - confidence) / 2;
    const { low, high } = clopperPearson(x, n, confidence);
    if (x === 0) expect(low).toBe(0);
    else {
      // P(X ≥ x | p = low) = α/2, and it is never above α/2 (the bound is never optimistic).
      const upperTail = 1 - binomialCdf(x - 1, n, low);
      expect(upperTail).toBeCloseTo(tail, 9);
      expect(upperTail).toBeLessThanOrEqual(tail + 1e-12);
    }
    if (x === n) expect(high).toBe(1);
    else {
      const lowerTail = binomialCdf(x, n, high);
      expect(lowerTail).toBeCloseTo(tail, 9);
      expect(lowerTail).toBeLessThanOrEqual(tail + 1e-12);
    }
    expect(low).toBeLessThanOrEqual(x / n);
    expect(high).toBeGreaterThanOrEqual(x / n);
  });

  it("gives the closed forms at the edges: n of n → (α/2)^(1/n), 0 of n → 1 − (α/2)^(1/n)", () => {
    expect(clopperPearson(40, 40).low).toBeCloseTo(0.025 ** (1 / 40), 12);
    expect(clopperPearson(0, 40).high).toBeCloseTo(1 - 0.025 ** (1 / 40), 12);
  });

  it("agrees with the incomplete beta's relation to the binomial: P(X ≥ k) = I_p(k, n − k + 1)", () => {
    for (const [k, n, p] of [[3, 10, 0.2], [7, 12, 0.55], [1, 3, 0.9], [180, 200, 0.93]] as const) {
      expect(incompleteBeta(p, k, n - k + 1)).toBeCloseTo(1 - binomialCdf(k - 1, n, p), 11);
    }
  });

  it("needs 72 of 72 labelled includes for a two-sided 95% bound of 95% recall", () => {
    // (α/2)^(1/n) ≥ 0.95 needs n ≥ ln 0.025 / ln 0.95 = 71.9.
    expect(clopperPearson(72, 72).low).toBeGreaterThanOrEqual(0.95);
    expect(clopperPearson(71, 71).low).toBeLessThan(0.95);
  });

  it("refuses counts that are no binomial outcome", () => {
    expect(() => clopperPearson(3, 2)).toThrow(RangeError);
    expect(() => clopperPearson(0, 0)).toThrow(RangeError);
  });
});
