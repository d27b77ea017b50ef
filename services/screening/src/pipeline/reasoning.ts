import type { ScreeningPaper } from "@litrev/contracts";
import { batches, forEachLimited } from "./pool";
import type { StageContext } from "./stage";
import type { ReasoningInput, StageUsage } from "./types";

interface ReasonCheckpoint {
  reasons: string[];
  usage: StageUsage;
}

/** Stage 2: one short reasoning per paper, explaining its decision against the criteria. */
export async function reasonPapers(
  ctx: StageContext,
  papers: ScreeningPaper[],
  inputs: ReasoningInput[],
  batchSize: number,
): Promise<string[]> {
  const reasons: string[] = new Array(papers.length);
  const units = batches(papers.length, batchSize);
  const done = await ctx.job.checkpoints.load<ReasonCheckpoint>("reasoning");
  let finished = 0;
  for (const unit of units) {
    const saved = done.get(String(unit.index));
    if (!saved || saved.reasons.length !== unit.end - unit.start) continue;
    saved.reasons.forEach((reason, i) => (reasons[unit.start + i] = reason));
    ctx.usage.add("reasoning", saved.usage);
    finished += saved.reasons.length;
  }
  await ctx.progress("reasoning", finished, papers.length);

  const todo = units.filter((unit) => reasons[unit.start] === undefined);
  await forEachLimited(todo, ctx.concurrency, ctx.job.signal, async (unit) => {
    const { value, usage } = await ctx.model.reason(inputs.slice(unit.start, unit.end));
    await ctx.job.checkpoints.save("reasoning", String(unit.index), { reasons: value, usage } satisfies ReasonCheckpoint);
    value.forEach((reason, i) => (reasons[unit.start + i] = reason));
    ctx.usage.add("reasoning", usage);
    finished += value.length;
    await ctx.progress("reasoning", finished, papers.length);
  });
  return reasons;
}
