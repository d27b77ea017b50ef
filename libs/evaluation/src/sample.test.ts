import { describe, expect, it } from "vitest";
import { recallCertificate } from "./recall-certificate";
import { drawSample, jobPaperOf, thresholdOf } from "./sample";
import type { JobPaper } from "./validation";

const papers: JobPaper[] = Array.from({ length: 1000 }, (_, i) => ({ id: `p${i}`, score: i < 600 ? 0 : i < 900 ? 1 : 2, included: null }));

describe("drawing a validation sample", () => {
  it("replays a draw from its seed, draws distinct papers of the job, and records the inclusion probabilities", () => {
    const a = drawSample(papers, "simple", 200, 7, 1);
    expect(drawSample(papers, "simple", 200, 7, 1)).toEqual(a);
    expect(drawSample(papers, "simple", 200, 8, 1).ids).not.toEqual(a.ids);
    expect(new Set(a.ids).size).toBe(200);
    expect(a.strata.reduce((s, l) => s + l.sampled, 0)).toBe(200);
    for (const l of a.strata) expect(l.inclusion_probability).toBe(l.sampled / l.papers);
  });

  it("samples below the threshold at twice the rate when stratified, and only below it for what would go unread", () => {
    const strat = drawSample(papers, "stratified", 160, 1, 1);
    const [zero, one, two] = strat.strata;
    expect(zero!.inclusion_probability).toBeCloseTo(2 * one!.inclusion_probability, 2);
    expect(one!.inclusion_probability).toBeCloseTo(two!.inclusion_probability, 2);
    const below = drawSample(papers, "below_threshold", 100, 1, 2);
    expect(below.strata.map((l) => l.sampled)).toEqual([expect.any(Number), expect.any(Number), 0]);
    expect(below.ids.every((id) => Number(String(id).slice(1)) < 900)).toBe(true);
  });

  it("puts the drawn papers in a random order, not level by level", () => {
    const strat = drawSample(papers, "stratified", 300, 3, 1);
    const firstHalfLevels = new Set(strat.ids.slice(0, 50).map((id) => papers[Number(String(id).slice(1))]!.score));
    expect(firstHalfLevels.size).toBe(3);
  });
});

describe("reading the job for validation", () => {
  // Audit "Why 5": a fractional threshold was reported as 1 (the route's integer fallback).
  it("keeps a fractional threshold as the job recorded it, and the spec's default without one", () => {
    expect(thresholdOf({ threshold: 2.5 })).toBe(2.5);
    expect(thresholdOf({})).toBe(1);
    expect(thresholdOf({ threshold: "2" })).toBe(1);
    expect(jobPaperOf({ id: 3, final_score: 2, decision: "include" })).toEqual({ id: 3, score: 2, included: true });
    expect(jobPaperOf({ id: "x", final_score: null })).toEqual({ id: "x", score: null, included: null });
  });

  it("answers a job without thresholds in words instead of failing", () => {
    const cert = recallCertificate([{ score: null, papers: 5, labelled: 2, includes: 1 }], { design: "simple", targetRecall: 0.9, confidence: 0.95, sides: "one", repetitions: 0 });
    expect(cert.recommended).toBeNull();
    expect(cert.reason).toMatch(/no threshold to certify/);
  });
});
