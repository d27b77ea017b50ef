import type { ScreeningPaper } from "@litrev/contracts";
import type { StageContext } from "./stage";
import { forEachLimited } from "./pool";
import { batchesOf } from "./stream";
import type { ReasoningInput, StageUsage } from "./types";

interface ReasonCheckpoint {
  reasons: string[];
  usage: StageUsage;
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
): Promise<void> {
  const done = await ctx.job.checkpoints.load<ReasonCheckpoint>("reasoning");
  let finished = 0;
  await ctx.progress("reasoning", 0, total);
  await forEachLimited(batchesOf(papers, batchSize), ctx.concurrency, ctx.job.signal, async (batch) => {
    const saved = done.get(String(batch.index));
    done.delete(String(batch.index));
    let reasons: string[];
    if (saved && saved.reasons.length === batch.items.length) {
      reasons = saved.reasons;
      ctx.usage.add("reasoning", saved.usage);
    } else {
      const inputs = batch.items.map((paper, i) => inputFor(batch.start + i, paper));
      const { value, usage } = await ctx.model.reason(inputs);
      await ctx.job.checkpoints.save("reasoning", String(batch.index), { reasons: value, usage } satisfies ReasonCheckpoint);
      ctx.usage.add("reasoning", usage);
      reasons = value;
    }
    reasons.forEach((reason, i) => settle(batch.start + i, reason));
    finished += reasons.length;
    await ctx.progress("reasoning", finished, total);
  });
  done.clear();
}
