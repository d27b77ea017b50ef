import type { ScreeningPaper } from "@litrev/contracts";
import { batches, forEachLimited } from "./pool";
import type { StageContext } from "./stage";
import type { ReasoningInput, StageUsage } from "./types";

interface ReasonCheckpoint {
  reasons: string[];
  usage: StageUsage;
}

/**
 * Stage 2: one short reasoning per paper, explaining its decision against the criteria. The model
 * input of a batch is built when the batch is sent (`inputFor`), each reason goes to `settle`, and
 * the paper's entry in `papers` is then emptied down to its id: later stages need only the reasons.
 */
export async function reasonPapers(
  ctx: StageContext,
  papers: ScreeningPaper[],
  inputFor: (index: number, paper: ScreeningPaper) => ReasoningInput,
  batchSize: number,
  settle: (index: number, reason: string) => void,
): Promise<void> {
  const units = batches(papers.length, batchSize);
  const reasoned = (start: number, reasons: string[]) =>
    reasons.forEach((reason, i) => {
      settle(start + i, reason);
      papers[start + i] = { id: papers[start + i]!.id, title: "", abstract: "" };
    });

  const done = await ctx.job.checkpoints.load<ReasonCheckpoint>("reasoning");
  const restored = new Set<number>();
  let finished = 0;
  for (const unit of units) {
    const saved = done.get(String(unit.index));
    done.delete(String(unit.index));
    if (!saved || saved.reasons.length !== unit.end - unit.start) continue;
    reasoned(unit.start, saved.reasons);
    restored.add(unit.index);
    ctx.usage.add("reasoning", saved.usage);
    finished += saved.reasons.length;
  }
  done.clear();
  await ctx.progress("reasoning", finished, papers.length);

  const unfinished = units.filter((unit) => !restored.has(unit.index));
  await forEachLimited(unfinished, ctx.concurrency, ctx.job.signal, async (unit) => {
    const inputs = papers.slice(unit.start, unit.end).map((paper, i) => inputFor(unit.start + i, paper));
    const { value, usage } = await ctx.model.reason(inputs);
    await ctx.job.checkpoints.save("reasoning", String(unit.index), { reasons: value, usage } satisfies ReasonCheckpoint);
    reasoned(unit.start, value);
    ctx.usage.add("reasoning", usage);
    finished += value.length;
    await ctx.progress("reasoning", finished, papers.length);
  });
}
