import type { ScreeningPaper } from "@litrev/contracts";
import { batches, forEachLimited } from "./pool";
import type { StageContext } from "./stage";
import type { LabelVote, StageUsage } from "./types";

interface LabelCheckpoint {
  votes: LabelVote[][];
  usage: StageUsage;
}

/**
 * Stage 1: R independent votes per paper, each with a verdict per criterion. Papers go to the
 * model in batches (fixed instructions and criteria first, the papers last); each finished batch
 * is checkpointed, so a redelivered job never sends a labelled paper to the provider again.
 */
export async function labelPapers(
  ctx: StageContext,
  papers: ScreeningPaper[],
  repetitions: number,
  batchSize: number,
): Promise<LabelVote[][]> {
  const labels: LabelVote[][] = new Array(papers.length);
  const units = batches(papers.length, batchSize);
  const done = await ctx.job.checkpoints.load<LabelCheckpoint>("labelling");
  let finished = 0;
  for (const unit of units) {
    const saved = done.get(String(unit.index));
    if (!saved || saved.votes.length !== unit.end - unit.start) continue;
    saved.votes.forEach((votes, i) => (labels[unit.start + i] = votes));
    ctx.usage.add("labelling", saved.usage);
    finished += saved.votes.length;
  }
  if (finished > 0) ctx.job.logger.info({ papers: finished }, "labelling resumed from checkpoints");
  await ctx.progress("labelling", finished, papers.length);

  const todo = units.filter((unit) => labels[unit.start] === undefined);
  await forEachLimited(todo, ctx.concurrency, ctx.job.signal, async (unit) => {
    const batch = papers.slice(unit.start, unit.end);
    const { value, usage } = await ctx.model.label(batch, repetitions);
    await ctx.job.checkpoints.save("labelling", String(unit.index), { votes: value, usage } satisfies LabelCheckpoint);
    value.forEach((votes, i) => (labels[unit.start + i] = votes));
    ctx.usage.add("labelling", usage);
    finished += batch.length;
    await ctx.progress("labelling", finished, papers.length);
  });
  return labels;
}
