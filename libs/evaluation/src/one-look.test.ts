import { describe, expect, it } from "vitest";
import type { VoteLevel } from "./certificate";
import { recallCertificate } from "./recall-certificate";
import { oneLookCertifies, oneLookRecallLower, upperTail } from "./one-look";
import { generator } from "./random";
import { logHypergeometric } from "./sequence";
import { validateJob, type JobPaper } from "./validation";

/**
 * The classic "95% recall with 95% confidence" rule: a single planned look at a simple random
 * sample whose 59 included papers are all kept certifies 95% (0.05^(1/59) = 0.9505).
 */

// A 2,000-paper job, R = 1: 1,400 papers kept (200 included), 600 below (none included).
const JOB: [number, number][] = [
  [600, 0],
  [1400, 200],
];
// A simple random sample of 590 papers: 59 included (all kept), 531 excluded, 177 of them below.
const SAMPLED: [number, number][] = [
  [177, 0],
  [413, 59],
];

describe("the planned single look", () => {
  it("certifies 95% recall on 59 of 59 sampled includes kept (the sample route's plan once)", () => {
    const levels: VoteLevel[] = JOB.map(([papers], score) => ({ score, papers, labelled: SAMPLED[score]![0], includes: SAMPLED[score]![1] }));
    const cert = recallCertificate(levels, { design: "simple", targetRecall: 0.95, confidence: 0.95, sides: "one", repetitions: 1, plan: "once", sampleSize: 590 });
    expect(cert.recommended?.votes).toBe(1);
    expect(cert.recommended!.recall_lower).toBeGreaterThanOrEqual(0.9505);
  });

  it("certifies 95% recall on 59 of 59 labelled includes kept (the legacy validation route)", () => {
    const papers: JobPaper[] = [];
    const labels: { id: string; included: boolean }[] = [];
    JOB.forEach(([count], score) => {
      for (let i = 0; i < count; i++) {
        const id = `s${score}-${i}`;
        papers.push({ id, score, included: null });
        if (i < SAMPLED[score]![0]) labels.push({ id, included: i < SAMPLED[score]![1] });
      }
    });
    const result = validateJob({ jobId: "job", papers, repetitions: 1, jobThreshold: 1, labels, targetRecall: 0.95, confidence: 0.95 });
    expect(result.recommended?.votes).toBe(1);
    expect(result.recommended!.recall_ci.low).toBeGreaterThanOrEqual(0.9505);
  });
});

describe("the one-look test", () => {
  it("certifies exactly when the one-look bound reaches the target", () => {
    const next = generator(39);
    const int = (n: number) => Math.floor(next() * (n + 1));
    let certified = 0;
    for (let i = 0; i < 300; i++) {
      const keptPapers = 20 + int(300);
      const belowPapers = 5 + int(300);
      const keptLabelled = int(keptPapers);
      const belowLabelled = int(belowPapers);
      const sample = {
        kept: { papers: keptPapers, labelled: keptLabelled, includes: int(keptLabelled) },
        below: { papers: belowPapers, labelled: belowLabelled, includes: next() < 0.5 ? 0 : int(Math.min(3, belowLabelled)) },
      };
      const alpha = [0.05, 0.1, 0.2][i % 3]!;
      const lower = oneLookRecallLower(sample, alpha);
      const tau = i % 2 ? 0.8 + 0.2 * next() : Math.max(0, lower - 1e-9);
      expect(oneLookCertifies(sample, alpha, tau), JSON.stringify({ sample, alpha, tau, lower })).toBe(lower >= tau);
      if (lower >= tau) certified++;
    }
    expect(certified).toBeGreaterThan(100);
  });
});

describe("the one-look bound's tails", () => {
  // As first written: every term its own exponential (seconds for the bound of a large job).
  const termByTerm = (x: number, K: number, A: number, m: number) => {
    let p = 0;
    for (let i = x; i <= Math.min(m, A); i++) p += Math.exp(logHypergeometric(i, K, A, m));
    return p;
  };

  it("equal the sum term by term, to 7 digits (both carry the rounding of the running sum of logs behind the log-factorials), on small and large hypergeometrics", () => {
    const next = generator(41);
    const int = (n: number) => Math.floor(next() * (n + 1));
    let compared = 0;
    for (let i = 0; i < 2_000; i++) {
      const K = 1 + int(i < 1_500 ? 300 : 50_000);
      const A = int(K);
      const m = int(Math.min(K, 3_000));
      const x = int(m);
      const exact = termByTerm(x, K, A, m);
      const tail = upperTail(x, K, A, m);
      if (exact > 1e-300) expect(Math.abs(tail - exact) / exact, JSON.stringify({ x, K, A, m, exact, tail })).toBeLessThan(1e-7);
      else expect(tail).toBeLessThan(1e-290);
      // Stopped once past `stop`: above it exactly when the whole tail is.
      const stop = [0.05, 0.1, 0.025][i % 3]!;
      expect(upperTail(x, K, A, m, stop) > stop, JSON.stringify({ x, K, A, m, exact, stop })).toBe(exact > stop);
      compared++;
    }
    expect(compared).toBe(2_000);
  });
});

describe("the method paragraph a report cites", () => {
  const levels: VoteLevel[] = JOB.map(([papers], score) => ({ score, papers, labelled: SAMPLED[score]![0], includes: SAMPLED[score]![1] }));
  const options = { targetRecall: 0.95, confidence: 0.95, sides: "one" as const, repetitions: 1 };

  it("names the betting test, not the split error or per-level bounds it replaced, for a sample analysed as labels arrive", () => {
    for (const design of ["simple", "stratified"] as const) {
      const { method } = recallCertificate(levels, { ...options, design, plan: "anytime" });
      expect(method).toMatch(/betting/);
      expect(method).not.toMatch(/split a quarter|each level bounded on its own/);
    }
  });

  it("keeps the prior–posterior ratio's words where that sequence still certifies (below_threshold)", () => {
    const { method } = recallCertificate(levels, { ...options, design: "below_threshold", designThreshold: 1, includesRead: 200, plan: "anytime" });
    expect(method).toMatch(/prior–posterior ratio/);
  });
});
