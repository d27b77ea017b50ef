import type { LlmUsage, ScreeningPaper } from "@litrev/contracts";
import { CheckpointedStage } from "@litrev/jobs/worker";
import type { StageContext } from "./stage";
import { batchesOf } from "./batches";
import type { LabelVote, VoteSpread } from "./types";
import { votePool } from "./vote-groups";

interface LabelCheckpoint {
  votes: LabelVote[][];
  usage: LlmUsage;
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
  spreadVotes: boolean,
  settle: (index: number, paper: ScreeningPaper, votes: LabelVote[], trouble: string | undefined) => void,
  afterBatch?: () => void,
): Promise<void> {
  const stage = await CheckpointedStage.open<LabelCheckpoint>(ctx.job, "labelling");
  let finished = 0;
  let restored = 0;
  await ctx.progress("labelling", 0, total);
  // Where votes are separate requests, a unit pools `pool` calls' papers, regrouped for each vote;
  // its calls go through one window shared by the units (`gate`), and one unit more than fills it
  // runs, so the window stays full while a unit waits on its last calls.
  const pool = spreadVotes ? votePool(repetitions, batchSize) : 1;
  // (A spread unit's own calls wait on the window, so the unit itself must not hold a slot of it.)
  const spread: VoteSpread | undefined = spreadVotes ? { callSize: batchSize, pool, gate: ctx.calls } : undefined;
  await stage.run({
    units: batchesOf(papers, batchSize * pool),
    concurrency: spread ? Math.ceil(ctx.concurrency / pool) + 1 : ctx.concurrency,
    settleInSlot: ctx.capped,
    ...(spread ? {} : { calls: ctx.calls }),
    key: (batch) => String(batch.index),
    fits: (saved, batch) => saved.votes.length === batch.items.length,
    run: async (batch) => {
      const { value: votes, usage, trouble } = await ctx.model.label(batch.items, repetitions, spread);
      return { votes, usage, ...(trouble ? { trouble } : {}) };
    },
    settle: async (batch, { votes, usage, trouble }, how) => {
      if (how.restored) restored += votes.length;
      votes.forEach((paperVotes, i) => settle(batch.start + i, batch.items[i]!, paperVotes, trouble));
      // Metered after the votes are kept: a call that crosses the cost ceiling was paid for, so its papers stay.
      ctx.usage.add("labelling", usage);
      // Then the job's own check of what it settled (too many lost papers ends it), with the batch counted.
      afterBatch?.();
      finished += votes.length;
      await ctx.progress("labelling", finished, total);
    },
  });
  if (restored > 0) ctx.job.logger.info({ papers: restored }, "labelling resumed from checkpoints");
}
