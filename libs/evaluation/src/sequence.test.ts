import { describe, expect, it } from "vitest";
import { generator } from "./random";
import { allocate } from "./certificate";
import { recallCertificate } from "./recall-certificate";
import { upperGamma, voteLevelChiSquare } from "./randomness";
import { countBounds } from "./sequence";


describe("anytime-valid bounds on a finite group's includes", () => {
  it("is exact with everything labelled, vacuous with nothing, and always holds what was seen", () => {
    expect(countBounds({ papers: 50, labelled: 50, includes: 7 }, 0.05)).toEqual({ low: 7, high: 7 });
    expect(countBounds({ papers: 50, labelled: 0, includes: 0 }, 0.05)).toEqual({ low: 0, high: 50 });
    const b = countBounds({ papers: 1000, labelled: 300, includes: 12 }, 0.05);
    expect(b.low).toBeGreaterThanOrEqual(12);
    expect(b.high).toBeLessThanOrEqual(1000 - 288);
    // A smaller error can only widen the interval.
    const wider = countBounds({ papers: 1000, labelled: 300, includes: 12 }, 0.01);
    expect(wider.low).toBeLessThanOrEqual(b.low);
    expect(wider.high).toBeGreaterThanOrEqual(b.high);
  });

  it("misses the true count at some look in at most α of random orders, looking after every label", () => {
    const N = 200;
    const alpha = 0.1;
    for (const K of [0, 3, 20, 100]) {
      let missed = 0;
      const RUNS = 2000;
      for (let run = 0; run < RUNS; run++) {
        const next = generator(run * 31 + K);
        let left = K;
        let includes = 0;
        for (let n = 1; n <= N; n++) {
          // Draw without replacement: the next paper is an include with probability left / remaining.
          if (next() < left / (N - n + 1)) {
            includes++;
            left--;
          }
          const { low, high } = countBounds({ papers: N, labelled: n, includes }, alpha);
          if (K < low || K > high) {
            missed++;
            break;
          }
        }
      }
      expect(missed / RUNS).toBeLessThanOrEqual(alpha);
    }
  });
});

describe("the χ² check on vote-level counts", () => {
  it("matches closed forms of the χ² tail", () => {
    expect(upperGamma(1, 2)).toBeCloseTo(Math.exp(-2), 12);
    expect(upperGamma(0.5, 3.841458820694124 / 2)).toBeCloseTo(0.05, 9);
    expect(upperGamma(5, 0)).toBe(1);
  });

  it("passes a proportional sample and fails one stratified by level", () => {
    expect(voteLevelChiSquare([{ papers: 800, labelled: 80 }, { papers: 200, labelled: 20 }])!.chi2).toBe(0);
    const stratified = voteLevelChiSquare([{ papers: 4000, labelled: 400 }, { papers: 1000, labelled: 400 }, { papers: 4000, labelled: 400 }])!;
    expect(stratified.df).toBe(2);
    expect(stratified.p_value).toBeLessThan(1e-10);
    expect(voteLevelChiSquare([{ papers: 10, labelled: 10 }])).toBeNull();
  });
});

describe("the certificate's designs", () => {
  const levels = [
    { score: 0, papers: 600 },
    { score: 1, papers: 300 },
    { score: 2, papers: 100 },
  ];
  it("allocates a sample that adds up, twice the rate below the threshold when stratified", () => {
    expect(allocate(levels, 100, "simple", 1)).toEqual([60, 30, 10]);
    const strat = allocate(levels, 160, "stratified", 1);
    expect(strat.reduce((s, n) => s + n, 0)).toBe(160);
    expect(strat[0]! / 600).toBeCloseTo((2 * strat[1]!) / 300, 2);
    expect(allocate(levels, 100, "below_threshold", 1)).toEqual([100, 0, 0]);
    expect(allocate(levels, 5000, "simple", 1)).toEqual([600, 300, 100]);
  });

  it("bounds what goes unread below a threshold, and recall once the team says what it found reading the rest", () => {
    const below = [
      { score: 0, papers: 600, labelled: 300, includes: 0 },
      { score: 1, papers: 400, labelled: 0, includes: 0 },
    ];
    const options = { design: "below_threshold" as const, designThreshold: 1, targetRecall: 0.9, confidence: 0.95, sides: "one" as const, repetitions: 1 };
    const without = recallCertificate(below, options);
    expect(without.recommended).toBeNull();
    expect(without.thresholds[0]!.missed_upper).toBeGreaterThan(0);
    expect(without.thresholds[0]!.missed_upper).toBeLessThan(20);
    expect(without.reason).toMatch(/includes_read/);
    const withRead = recallCertificate(below, { ...options, includesRead: 150 });
    expect(withRead.recommended?.votes).toBe(1);
    expect(withRead.recommended!.recall_lower).toBeCloseTo(150 / (150 + withRead.thresholds[0]!.missed_upper), 12);
  });
});
