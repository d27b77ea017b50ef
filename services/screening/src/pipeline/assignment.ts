import { batches, forEachLimited } from "./pool";
import type { StageContext } from "./stage";
import type { StageUsage, Theme } from "./types";

interface AssignCheckpoint {
  assignments: number[];
  usage: StageUsage;
}

export interface ClusterAssignment {
  /** Per clustered paper, its final cluster id (0-based, empty clusters removed). */
  clusterIds: number[];
  clusters: { cluster_id: number; label: string; description: string; count: number }[];
}

/**
 * Stage 4: each clustered paper to exactly one cluster. Clusters no paper fell into are dropped
 * and the rest renumbered, so cluster ids are dense and the counts sum to the clustered papers.
 */
export async function assignClusters(ctx: StageContext, reasons: string[], themes: Theme[], batchSize: number): Promise<ClusterAssignment> {
  if (reasons.length === 0 || themes.length === 0) {
    await ctx.progress("assignment", 1, 1);
    return { clusterIds: [], clusters: [] };
  }
  const raw: number[] = new Array(reasons.length);
  const units = batches(reasons.length, batchSize);
  const done = await ctx.job.checkpoints.load<AssignCheckpoint>("assignment");
  let finished = 0;
  for (const unit of units) {
    const saved = done.get(String(unit.index));
    if (!saved || saved.assignments.length !== unit.end - unit.start) continue;
    saved.assignments.forEach((a, i) => (raw[unit.start + i] = a));
    ctx.usage.add("assignment", saved.usage);
    finished += saved.assignments.length;
  }
  await ctx.progress("assignment", finished, reasons.length);
  const unfinished = units.filter((unit) => raw[unit.start] === undefined);
  await forEachLimited(unfinished, ctx.concurrency, ctx.job.signal, async (unit) => {
    const { value, usage } = await ctx.model.assign(reasons.slice(unit.start, unit.end), themes);
    await ctx.job.checkpoints.save("assignment", String(unit.index), { assignments: value, usage } satisfies AssignCheckpoint);
    value.forEach((a, i) => (raw[unit.start + i] = a));
    ctx.usage.add("assignment", usage);
    finished += value.length;
    await ctx.progress("assignment", finished, reasons.length);
  });

  const counts = new Array<number>(themes.length).fill(0);
  const valid = raw.map((a) => (Number.isInteger(a) && a >= 0 && a < themes.length ? a : -1));
  for (const a of valid) if (a >= 0) counts[a]!++;
  // An answer outside the list goes to the largest cluster rather than nowhere: every clustered paper has one.
  const largest = counts.indexOf(Math.max(...counts));
  const fallback = largest >= 0 ? largest : 0;
  const resolved = valid.map((a) => (a >= 0 ? a : fallback));
  const finalCounts = new Array<number>(themes.length).fill(0);
  for (const a of resolved) finalCounts[a]!++;

  const renumber = new Map<number, number>();
  const clusters: ClusterAssignment["clusters"] = [];
  themes.forEach((theme, i) => {
    if (finalCounts[i]! === 0) return;
    renumber.set(i, clusters.length);
    clusters.push({ cluster_id: clusters.length, label: theme.label, description: theme.description, count: finalCounts[i]! });
  });
  return { clusterIds: resolved.map((a) => renumber.get(a)!), clusters };
}
