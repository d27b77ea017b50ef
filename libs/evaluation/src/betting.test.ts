import { describe, expect, it } from "vitest";
import { betRecallLower, RecallBet, type BetStratum } from "./betting";
import { generator } from "./random";

/** Labels a job's strata in one random order (each stratum's `sampled` papers drawn at random from it): how often some look certifies τ. */
function certifiedRate(levels: { papers: number; includes: number; sampled: number; kept: boolean }[], tau: number, alpha: number, runs: number): number {
  let certified = 0;
  for (let run = 0; run < runs; run++) {
    const next = generator(run * 7 + 3);
    const pool: [number, boolean][] = [];
    levels.forEach((l, h) => {
      // The stratum's sampled papers: a random subset, so each holds a hypergeometric number of includes.
      let left = l.includes;
      for (let i = 0; i < l.sampled; i++) {
        const included = next() * (l.papers - i) < left;
        if (included) left--;
        pool.push([h, included]);
      }
    });
    for (let i = pool.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [pool[i], pool[j]] = [pool[j]!, pool[i]!];
    }
    const bet = new RecallBet(levels, tau);
    for (const [h, included] of pool) {
      bet.push(h, included);
      if (bet.wealth() >= 1 / alpha) {
        certified++;
        break;
      }
    }
  }
  return certified / runs;
}

describe("the betting test of recall", () => {
  it("certifies a recall just below τ at some look after every label in at most α of runs (simple)", () => {
    // 400 papers: 40 includes kept, 3 below (recall 0.930 against τ = 0.93 + ε).
    const levels = [
      { papers: 200, includes: 3, sampled: 200, kept: false },
      { papers: 200, includes: 40, sampled: 200, kept: true },
    ];
    expect(certifiedRate(levels, 40 / 43 + 1e-9, 0.1, 1500)).toBeLessThanOrEqual(0.1);
  });

  it("does the same on a stratified sample with tiny strata, weighting each by its rate", () => {
    const levels = [
      { papers: 300, includes: 2, sampled: 150, kept: false },
      { papers: 5, includes: 1, sampled: 2, kept: false },
      { papers: 60, includes: 30, sampled: 15, kept: true },
      { papers: 4, includes: 3, sampled: 1, kept: true },
    ];
    const tau = 33 / 36 + 1e-9;
    expect(certifiedRate(levels, tau, 0.1, 1500)).toBeLessThanOrEqual(0.1);
  });

  it("certifies about as soon as one planned look would when nothing is missed: 59 kept includes and none below give 95%", () => {
    const strata: BetStratum[] = [
      { papers: 100_000, sampled: 100_000, kept: false },
      { papers: 100_000, sampled: 100_000, kept: true },
    ];
    const labels = Array.from({ length: 200 }, (_, i) => ({ stratum: i % 2, included: i % 2 === 1 && i < 140 }));
    // 70 kept includes, no miss: past 95% by the weight the all-in bet carries (one look needs 59).
    expect(betRecallLower(strata, labels, 0.05)).toBeGreaterThan(0.95);
    expect(betRecallLower(strata, labels.slice(0, 100), 0.05)).toBeLessThan(0.95);
  });
});
