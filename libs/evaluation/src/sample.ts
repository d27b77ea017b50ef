import type { SampleDesign } from "@litrev/contracts";
import { allocate } from "./certificate";
import { generator } from "./random";
import type { JobPaper } from "./validation";

/**
 * Drawing a validation sample: which papers, in which order. Each vote level's papers are chosen
 * uniformly at random without replacement (a partial Fisher–Yates shuffle with a seeded generator,
 * so the seed replays the draw), and the chosen papers are put in one random order. Labelled in
 * that order, any prefix is a random sample of each level: what the certificate's bounds assume.
 */
export interface DrawnSample {
  ids: (string | number)[];
  strata: { votes: number | null; papers: number; sampled: number; inclusion_probability: number }[];
}

export function drawSample(papers: readonly JobPaper[], design: SampleDesign, size: number, seed: number, threshold: number): DrawnSample {
  const byLevel = new Map<number | null, JobPaper[]>();
  for (const paper of papers) {
    const list = byLevel.get(paper.score) ?? [];
    if (list.length === 0) byLevel.set(paper.score, list);
    list.push(paper);
  }
  const levels = [...byLevel.entries()].sort((a, b) => (a[0] ?? Infinity) - (b[0] ?? Infinity)).map(([score, list]) => ({ score, papers: list.length, list }));
  const next = generator(seed);
  // A simple random sample is drawn from all papers at once (its level counts are then random too).
  const sizes = design === "simple" ? simpleSizes(levels, size, next) : allocate(levels, size, design, threshold);
  const chosen: JobPaper[] = [];
  levels.forEach((level, i) => chosen.push(...partialShuffle(level.list, sizes[i]!, next)));
  const ordered = partialShuffle(chosen, chosen.length, next);
  return {
    ids: ordered.map((p) => p.id),
    strata: levels.map((level, i) => ({ votes: level.score, papers: level.papers, sampled: sizes[i]!, inclusion_probability: level.papers ? sizes[i]! / level.papers : 0 })),
  };
}

/** A simple random sample's papers per level: `size` draws without replacement over all levels. */
function simpleSizes(levels: readonly { papers: number }[], size: number, next: () => number): number[] {
  const left = levels.map((l) => l.papers);
  let pool = left.reduce((s, n) => s + n, 0);
  const sizes = levels.map(() => 0);
  const n = Math.min(size, pool);
  for (let i = 0; i < n; i++) {
    let u = Math.floor(next() * pool);
    let j = 0;
    while (u >= left[j]!) u -= left[j++]!;
    sizes[j]!++;
    left[j]!--;
    pool--;
  }
  return sizes;
}

/** `k` items of `items` in random order (the first k of a Fisher–Yates shuffle). */
function partialShuffle<T>(items: readonly T[], k: number, next: () => number): T[] {
  const out = [...items];
  for (let i = 0; i < Math.min(k, out.length); i++) {
    const j = i + Math.floor(next() * (out.length - i));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out.slice(0, k);
}

/** A result item as the validation reads it: its include votes and the job's decision. */
export function jobPaperOf(item: { id: string | number; final_score?: unknown; decision?: unknown }): JobPaper {
  const score = typeof item.final_score === "number" && Number.isFinite(item.final_score) ? item.final_score : null;
  const decision = item.decision;
  return { id: item.id, score, included: decision === "include" ? true : decision === "exclude" ? false : null };
}

/** The job's include threshold as it recorded it (a float: 2.5 keeps papers with 3 or more votes); the spec's 1.0 otherwise. */
export function thresholdOf(config: Record<string, unknown>): number {
  const value = config.threshold;
  return typeof value === "number" && Number.isFinite(value) ? value : 1;
}
