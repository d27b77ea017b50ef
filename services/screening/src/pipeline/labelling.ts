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
 *
 * Each labelled paper's votes go to `settle` at once and are not kept here; the paper's entry in
 * `papers` is then replaced by what the reasoning stage still needs of it (`keepForReasoning`),
 * which lets the full abstract go as soon as its batch is labelled.
 */
export async function labelPapers(
  ctx: StageContext,
  papers: ScreeningPaper[],
  repetitions: number,
  batchSize: number,
  settle: (index: number, votes: LabelVote[]) => void,
): Promise<void> {
  const units = batches(papers.length, batchSize);
  const labelled = (start: number, votes: LabelVote[][]) =>
    votes.forEach((paperVotes, i) => {
      settle(start + i, paperVotes);
      papers[start + i] = ctx.model.keepForReasoning(papers[start + i]!);
    });

  const done = await ctx.job.checkpoints.load<LabelCheckpoint>("labelling");
  const restored = new Set<number>();
  let finished = 0;
  for (const unit of units) {
    const saved = done.get(String(unit.index));
    done.delete(String(unit.index));
    if (!saved || saved.votes.length !== unit.end - unit.start) continue;
    labelled(unit.start, saved.votes);
    restored.add(unit.index);
    ctx.usage.add("labelling", saved.usage);
    finished += saved.votes.length;
  }
  done.clear();
  if (finished > 0) ctx.job.logger.info({ papers: finished }, "labelling resumed from checkpoints");
  await ctx.progress("labelling", finished, papers.length);

  const unfinished = units.filter((unit) => !restored.has(unit.index));
  await forEachLimited(unfinished, ctx.concurrency, ctx.job.signal, async (unit) => {
    const { value, usage } = await ctx.model.label(papers.slice(unit.start, unit.end), repetitions);
    await ctx.job.checkpoints.save("labelling", String(unit.index), { votes: value, usage } satisfies LabelCheckpoint);
    labelled(unit.start, value);
    ctx.usage.add("labelling", usage);
    finished += value.length;
    await ctx.progress("labelling", finished, papers.length);
  });
}
