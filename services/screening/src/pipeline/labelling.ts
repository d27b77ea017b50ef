import type { ScreeningPaper } from "@litrev/contracts";
import type { StageContext } from "./stage";
import { forEachLimited } from "./pool";
import { batchesOf } from "./stream";
import type { LabelVote, StageUsage } from "./types";

interface LabelCheckpoint {
  votes: LabelVote[][];
  usage: StageUsage;
  /** What the replies got wrong when some papers of the batch were left short of votes. */
  trouble?: string | undefined;
}

/**
 * Stage 1: R independent votes per paper, each with a verdict per criterion. Papers are read from
 * the job's input as the calls need them and go to the model in batches (fixed instructions and
 * criteria first, the papers last); each finished batch is checkpointed, so a redelivered job
 * never sends a labelled paper to the provider again. Each paper's votes go to `settle` at once
 * (fewer than `repetitions` for a paper the model kept losing, with what went wrong); its text is
 * not kept (reasoning reads the input again).
 */
export async function labelPapers(
  ctx: StageContext,
  papers: AsyncIterable<ScreeningPaper[]>,
  total: number,
  repetitions: number,
  batchSize: number,
  settle: (index: number, paper: ScreeningPaper, votes: LabelVote[], trouble: string | undefined) => void,
  afterBatch?: () => void,
): Promise<void> {
  const done = await ctx.job.checkpoints.load<LabelCheckpoint>("labelling");
  let finished = 0;
  let restored = 0;
  await ctx.progress("labelling", 0, total);
  await forEachLimited(batchesOf(papers, batchSize), ctx.concurrency, ctx.job.signal, async (batch) => {
    const saved = done.get(String(batch.index));
    done.delete(String(batch.index));
    let votes: LabelVote[][];
    let usage: LabelCheckpoint["usage"];
    let trouble: string | undefined;
    if (saved && saved.votes.length === batch.items.length) {
      ({ votes, usage, trouble } = saved);
      restored += votes.length;
    } else {
      const labelled = await ctx.model.label(batch.items, repetitions);
      ({ value: votes, usage, trouble } = labelled);
      await ctx.job.checkpoints.save("labelling", String(batch.index), { votes, usage, ...(trouble ? { trouble } : {}) } satisfies LabelCheckpoint);
    }
    votes.forEach((paperVotes, i) => settle(batch.start + i, batch.items[i]!, paperVotes, trouble));
    // Metered after the votes are kept: a call that crosses the cost ceiling was paid for, so its papers stay.
    ctx.usage.add("labelling", usage);
    // Then the job's own check of what it settled (too many lost papers ends it), with the batch counted.
    afterBatch?.();
    finished += votes.length;
    await ctx.progress("labelling", finished, total);
  });
  done.clear();
  if (restored > 0) ctx.job.logger.info({ papers: restored }, "labelling resumed from checkpoints");
}
