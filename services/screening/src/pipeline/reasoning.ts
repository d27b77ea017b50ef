import type { LlmUsage, ScreeningPaper } from "@litrev/contracts";
import { CheckpointedStage } from "@litrev/jobs/worker";
import type { StageContext } from "./stage";
import { batchesOf, whenReady } from "./batches";
import type { ReasoningInput } from "./types";

interface ReasonCheckpoint {
  reasons: string[];
  usage: LlmUsage;
}

/**
 * Stage 2: one short reasoning per paper, explaining its decision against the criteria. The papers
 * are read from the job's input once more, batch by batch as the calls need them; the model input
 * of a batch is built when the batch is sent (`inputFor`) and each reason goes to `settle`: later
 * stages need only the reasons.
 */
export async function reasonPapers(
  ctx: StageContext,
  papers: AsyncIterable<ScreeningPaper[]>,
  total: number,
  inputFor: (index: number, paper: ScreeningPaper) => ReasoningInput,
  batchSize: number,
  settle: (index: number, reason: string) => void,
  /** Resolves once papers [0, end) are labelled (labelling still running): a batch waits for it before it is sent. */
  labelled: (end: number) => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const stage = await CheckpointedStage.open<ReasonCheckpoint>(ctx.job, "reasoning");
  let finished = 0;
  await ctx.progress("reasoning", 0, total);
  await stage.run({
    units: whenReady(batchesOf(papers, batchSize), (batch) => batch.start + batch.items.length, labelled),
    concurrency: ctx.concurrency,
    settleInSlot: ctx.capped,
    calls: ctx.calls,
    key: (batch) => String(batch.index),
    fits: (saved, batch) => saved.reasons.length === batch.items.length,
    run: async (batch) => {
      const { value, usage } = await ctx.model.reason(batch.items.map((paper, i) => inputFor(batch.start + i, paper)));
      return { reasons: value, usage };
    },
    settle: async (batch, { reasons, usage }) => {
      ctx.usage.add("reasoning", usage);
      reasons.forEach((reason, i) => settle(batch.start + i, reason));
      finished += reasons.length;
      await ctx.progress("reasoning", finished, total);
    },
  });
}
