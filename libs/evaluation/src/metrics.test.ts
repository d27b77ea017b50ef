import { describe, expect, it } from "vitest";
import { recallCurve, thresholdForRecall, thresholdTable, wssAtRecall, type ScoredPaper } from "./metrics";

const paper = (score: number | null, included: boolean, i: number): ScoredPaper => ({ id: `p${i}`, score, included });
// R = 2: inclusions scored 2, 2, 1, 0; exclusions scored 2, 1, 0, 0, 0, 0.
const papers = [
  ...[2, 2, 1, 0].map((s, i) => paper(s, true, i)),
  ...[2, 1, 0, 0, 0, 0].map((s, i) => paper(s, false, 10 + i)),
];

describe("screening metrics", () => {
  it("counts every vote threshold by hand", () => {
    const [t0, t1, t2] = thresholdTable(papers, 2);
    expect(t0).toMatchObject({ votes: 0, tp: 4, fp: 6, fn: 0, tn: 0, recall: 1, specificity: 0, precision: 0.4, workload: 1, work_saved: 0, wss: 0 });
    expect(t1).toMatchObject({ votes: 1, tp: 3, fp: 2, fn: 1, tn: 4, recall: 0.75, precision: 0.6, workload: 0.5 });
    expect(t1!.specificity).toBeCloseTo(4 / 6, 12);
    expect(t1!.f1).toBeCloseTo((2 * 0.75 * 0.6) / 1.35, 12);
    expect(t1!.wss).toBeCloseTo(0.25, 12);
    expect(t2).toMatchObject({ votes: 2, tp: 2, fp: 1, fn: 2, tn: 5, recall: 0.5 });
    expect(t2!.wss).toBeCloseTo(0.2, 12);
  });

  it("picks the strictest threshold that reaches the target recall", () => {
    const rows = thresholdTable(papers, 2);
    expect(thresholdForRecall(rows, 0.75)?.votes).toBe(1);
    expect(thresholdForRecall(rows, 0.95)?.votes).toBe(0);
    expect(thresholdForRecall(rows, 0.5)?.votes).toBe(2);
    expect(thresholdForRecall(thresholdTable([paper(1, false, 0)], 2), 0.95)).toBeNull();
  });

  it("computes WSS@95 with ties read in random order (expected position k(m+1)/(p+1))", () => {
    // All 4 inclusions needed: 3 + 2 papers read in the top groups, then the one inclusion among
    // 5 tied papers is found after 3 reads on average: 8 of 10 read.
    expect(wssAtRecall(papers, 2)).toBeCloseTo(1 - 0.8 - 0.05, 12);
    // A perfect screener: WSS@95 = 0.95 − 0.95·P/N (Cohen et al.).
    const perfect = Array.from({ length: 100 }, (_, i) => paper(i < 20 ? 3 : 0, i < 20, i));
    expect(wssAtRecall(perfect, 3)).toBeCloseTo(0.95 - (0.95 * 20) / 100, 12);
    // A screener that knows nothing (every score equal) is random reading: 19 of 20 inclusions are
    // found after 19·101/21 ≈ 91.4 of 100 papers on average (near 95%, short of it by discreteness).
    const blind = Array.from({ length: 100 }, (_, i) => paper(1, i < 20, i));
    expect(wssAtRecall(blind, 3)).toBeCloseTo(1 - (19 * 101) / 21 / 100 - 0.05, 12);
    expect(wssAtRecall([paper(0, false, 0)], 1)).toBeNull();
  });

  it("counts a paper without a result as read at every threshold", () => {
    const rows = thresholdTable([paper(null, true, 0), paper(null, false, 1)], 3);
    for (const row of rows) expect(row).toMatchObject({ tp: 1, fp: 1, fn: 0, tn: 0 });
  });

  it("draws the curve through the threshold points, strictest first", () => {
    expect(recallCurve(papers, 2)).toEqual([
      { votes: null, workload: 0, recall: 0 },
      { votes: 2, workload: 0.3, recall: 0.5 },
      { votes: 1, workload: 0.5, recall: 0.75 },
      { votes: 0, workload: 1, recall: 1 },
    ]);
  });

  it("bounds recall and specificity with exact intervals at the asked confidence", () => {
    const [, t1] = thresholdTable(papers, 2, 0.9);
    // 3 of 4 includes kept: the exact 90% interval's lower bound solves P(X ≥ 3 | 4, p) = 0.05.
    const { low, high } = t1!.recall_ci!;
    const atLeast3 = (p: number) => 4 * p ** 3 * (1 - p) + p ** 4;
    expect(atLeast3(low)).toBeCloseTo(0.05, 10);
    expect(1 - p4(high)).toBeCloseTo(0.05, 10);
  });
});

/** P(X = 4 | n = 4, p): the upper bound of 3 of 4 leaves 5% at or below 3, i.e. p⁴ = 0.95. */
const p4 = (p: number) => p ** 4;
