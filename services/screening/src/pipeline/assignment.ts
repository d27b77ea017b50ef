import type { LlmUsage } from "@litrev/contracts";
import { CheckpointedStage } from "@litrev/jobs/worker";
import { batches } from "./batches";
import type { StageContext } from "./stage";
import type { Theme } from "./types";

interface AssignCheckpoint {
  assignments: number[];
  usage: LlmUsage;
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
  const stage = await CheckpointedStage.open<AssignCheckpoint>(ctx.job, "assignment");
  let finished = 0;
  await stage.run({
    units: batches(reasons.length, batchSize),
    concurrency: ctx.concurrency,
    settleInSlot: ctx.capped,
    key: (unit) => String(unit.index),
    fits: (saved, unit) => saved.assignments.length === unit.end - unit.start,
    run: async (unit) => {
      const { value, usage } = await ctx.model.assign(reasons.slice(unit.start, unit.end), themes);
      return { assignments: value, usage };
    },
    settle: async (unit, { assignments, usage }, how) => {
      assignments.forEach((a, i) => (raw[unit.start + i] = a));
      ctx.usage.add("assignment", usage);
      finished += assignments.length;
      if (!how.restored) await ctx.progress("assignment", finished, reasons.length);
    },
    restored: () => ctx.progress("assignment", finished, reasons.length),
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
