import type { LlmUsage } from "@litrev/contracts";
import { CheckpointedStage } from "@litrev/jobs/worker";
import { batches, whenReady } from "./batches";
import type { StageContext } from "./stage";
import type { Theme } from "./types";

interface ThemesCheckpoint {
  themes: Theme[];
  usage: LlmUsage;
}

/** Themes a map call may propose, and how many themes one reduce call merges at most. */
const THEMES_PER_CHUNK = 6;
const MERGE_INPUT_MAX = 120;

/** The clustered papers' reasons, in order: how many, those of a range, and when a range is all written. */
export interface ClusteredReasons {
  count: number;
  slice(start: number, end: number): string[];
  /** Resolves once reasons [0, end) are written (reasoning may still be running); rejects if reasoning failed. */
  ready(end: number): Promise<void>;
}

/**
 * Stage 3: thematic clusters from the reasons of the clustered papers, by map-reduce so it scales
 * to any number of papers: each chunk of reasons yields a few themes (map), then the themes are
 * merged, level by level, until at most `maxClusters` remain (reduce). Every call is checkpointed.
 * A map call is sent as soon as its chunk's reasons are written, through the job's window of calls,
 * so the map overlaps the end of reasoning and only the merges wait for the last reason.
 */
export async function clusterReasons(ctx: StageContext, reasons: ClusteredReasons, chunkSize: number, maxClusters: number): Promise<Theme[]> {
  if (reasons.count === 0) {
    await ctx.progress("clustering", 1, 1);
    return [];
  }
  const chunks = batches(reasons.count, chunkSize);
  // Units of progress: every map call plus an estimate of the merge calls.
  const total = chunks.length + Math.max(1, Math.ceil((chunks.length * THEMES_PER_CHUNK) / MERGE_INPUT_MAX));
  let finished = 0;
  const stage = await CheckpointedStage.open<ThemesCheckpoint>(ctx.job, "clustering");

  const mapped: Theme[][] = new Array(chunks.length);
  await stage.run({
    units: whenReady(chunks, (chunk) => chunk.end, (end) => reasons.ready(end)),
    concurrency: ctx.concurrency,
    calls: ctx.calls,
    settleInSlot: ctx.capped,
    key: (chunk) => `map-${chunk.index}`,
    run: async (chunk) => {
      const { value, usage } = await ctx.model.themes(reasons.slice(chunk.start, chunk.end), THEMES_PER_CHUNK);
      return { themes: value, usage };
    },
    settle: async (chunk, { themes, usage }, how) => {
      mapped[chunk.index] = themes;
      ctx.usage.add("clustering", usage);
      finished++;
      if (!how.restored) await ctx.progress("clustering", finished, total);
    },
    restored: () => ctx.progress("clustering", finished, total),
  });

  let themes = dedupe(mapped.flat());
  // A single small chunk needs no merge beyond the cap; otherwise reduce level by level.
  for (let level = 0; themes.length > maxClusters || (level === 0 && chunks.length > 1); level++) {
    const groups = batches(themes.length, MERGE_INPUT_MAX);
    const target = groups.length === 1 ? maxClusters : Math.max(maxClusters, Math.ceil(MERGE_INPUT_MAX / 4));
    const merged: Theme[][] = new Array(groups.length);
    await stage.run({
      units: groups,
      concurrency: ctx.concurrency,
      settleInSlot: ctx.capped,
      key: (group) => `reduce-${level}-${group.index}`,
      run: async (group) => {
        const { value, usage } = await ctx.model.merge(themes.slice(group.start, group.end), target);
        return { themes: value, usage };
      },
      settle: async (group, saved, how) => {
        merged[group.index] = saved.themes;
        ctx.usage.add("clustering", saved.usage);
        if (how.restored) return;
        finished++;
        await ctx.progress("clustering", Math.min(finished, total - 1), total);
      },
    });
    const next = dedupe(merged.flat());
    // A model that will not shrink the list must not loop forever: keep the first clusters.
    themes = next.length >= themes.length && level > 0 ? next.slice(0, maxClusters) : next;
    if (groups.length === 1) themes = themes.slice(0, maxClusters);
  }
  await ctx.progress("clustering", total, total);
  return themes;
}

/** Same label (ignoring case and spacing) → one theme. */
function dedupe(themes: Theme[]): Theme[] {
  const seen = new Map<string, Theme>();
  for (const theme of themes) {
    const key = theme.label.trim().toLowerCase().replace(/\s+/g, " ");
    if (key && !seen.has(key)) seen.set(key, { label: theme.label.trim(), description: theme.description.trim() });
  }
  return [...seen.values()];
}
