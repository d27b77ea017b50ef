/**
 * Screening quality against labels. A paper's score is its number of include votes (0…R); at vote
 * threshold t the service includes a paper when score ≥ t, and everything included is what a human
 * still reads. A paper the job returned no result for counts as included at every threshold (a
 * human would have to read it), and the report says how many there were.
 */

import type { ThresholdRow } from "@litrev/contracts";
import { clopperPearson } from "./binomial";

export interface ScoredPaper {
  id: string | number;
  /** Include votes, or null when the job returned no result for the paper. */
  score: number | null;
  included: boolean;
}

export interface RowOptions {
  /** Two-sided confidence of the Clopper–Pearson intervals (default 0.95). */
  confidence?: number;
  /**
   * Share of all the job's papers kept at this threshold, when the labelled papers are a sample of
   * the job; by default the labelled papers are the whole job.
   */
  workload?: number;
}

/** Whether a paper is kept (read by a human) at a vote threshold: a paper without a result always is. */
export function kept(score: number | null, votes: number): boolean {
  return score === null || score >= votes;
}

export function thresholdRow(papers: readonly ScoredPaper[], votes: number, options: RowOptions = {}): ThresholdRow {
  const confidence = options.confidence ?? 0.95;
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  for (const paper of papers) {
    const read = kept(paper.score, votes);
    if (paper.included) {
      if (read) tp++;
      else fn++;
    } else if (read) fp++;
    else tn++;
  }
  const n = papers.length;
  const recall = ratio(tp, tp + fn);
  const specificity = ratio(tn, tn + fp);
  const precision = ratio(tp, tp + fp);
  const f1 = recall !== null && precision !== null && recall + precision > 0 ? (2 * recall * precision) / (recall + precision) : recall === null ? null : 0;
  const workload = options.workload ?? (n > 0 ? (tp + fp) / n : 0);
  return {
    votes,
    tp,
    fp,
    fn,
    tn,
    recall,
    recall_ci: tp + fn > 0 ? clopperPearson(tp, tp + fn, confidence) : null,
    specificity,
    specificity_ci: tn + fp > 0 ? clopperPearson(tn, tn + fp, confidence) : null,
    precision,
    f1,
    workload,
    work_saved: 1 - workload,
    wss: recall === null ? null : 1 - workload - (1 - recall),
  };
}

/** One row per vote threshold 0…R (threshold 0 includes everything: the human reads it all). */
export function thresholdTable(papers: readonly ScoredPaper[], repetitions: number, confidence = 0.95): ThresholdRow[] {
  return Array.from({ length: repetitions + 1 }, (_, t) => thresholdRow(papers, t, { confidence }));
}

/** The strictest threshold whose recall reaches `target`; null only when the labels have no inclusion. */
export function thresholdForRecall(rows: readonly ThresholdRow[], target: number): ThresholdRow | null {
  const reaching = rows.filter((row) => row.recall !== null && row.recall >= target - 1e-12);
  return reaching.length ? reaching.reduce((best, row) => (row.votes > best.votes ? row : best)) : null;
}

export interface CurvePoint {
  /** The threshold this point stands for (null for the origin). */
  votes: number | null;
  workload: number;
  recall: number;
}

/**
 * Recall against the share of papers read, reading papers from the most include votes down. Within
 * a group of equal scores the order is arbitrary, so the curve is the expectation over random order:
 * a straight line between the threshold points.
 */
export function recallCurve(papers: readonly ScoredPaper[], repetitions: number): CurvePoint[] {
  const positives = papers.filter((p) => p.included).length;
  const points: CurvePoint[] = [{ votes: null, workload: 0, recall: 0 }];
  if (papers.length === 0 || positives === 0) return points;
  for (let t = repetitions; t >= 0; t--) {
    const row = thresholdRow(papers, t);
    points.push({ votes: t, workload: row.workload, recall: row.recall ?? 0 });
  }
  return points;
}

/**
 * WSS@recall (default 95%): 1 − (papers read to find that share of the inclusions) / N − (1 − recall),
 * reading in order of include votes, ties in random order (their expected position: the k-th of p
 * positives among m tied papers is found after k(m+1)/(p+1) reads). Null without inclusions.
 */
export function wssAtRecall(papers: readonly ScoredPaper[], repetitions: number, recall = 0.95): number | null {
  const n = papers.length;
  const positives = papers.filter((p) => p.included).length;
  if (n === 0 || positives === 0) return null;
  const needed = Math.ceil(recall * positives - 1e-9);
  let read = 0;
  let found = 0;
  for (let t = repetitions; t >= 0; t--) {
    const group = papers.filter((p) => (p.score === null ? repetitions : Math.min(p.score, repetitions)) === t);
    const m = group.length;
    const p = group.filter((paper) => paper.included).length;
    if (found + p >= needed) {
      const k = needed - found;
      read += k === 0 ? 0 : (k * (m + 1)) / (p + 1);
      return 1 - read / n - (1 - recall);
    }
    read += m;
    found += p;
  }
  return 1 - read / n - (1 - recall);
}

function ratio(a: number, b: number): number | null {
  return b > 0 ? a / b : null;
}
