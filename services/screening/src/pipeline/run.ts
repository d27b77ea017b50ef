import { z } from "zod";
import { ScreeningJobParams, type ScreeningJobInput, type ScreeningPaper, type ScreeningStage } from "@litrev/contracts";
import { ITEM_CHUNK, PartialFailure, type ItemChunks, type JobContext, type JobOutcome, type JsonRecord } from "@litrev/jobs";
import { CostCeiling } from "@litrev/llm";
import { assignClusters } from "./assignment";
import { clusterReasons } from "./clustering";
import { CostCeilingExceeded, CostMeter } from "./cost-meter";
import { LabelTable } from "./label-table";
import { labelPapers } from "./labelling";
import { reasonPapers } from "./reasoning";
import { UsageMeter, type StageContext } from "./stage";
import type { JobFrame, ScreeningModel } from "./types";

export const PipelineSettingsSchema = z.object({
  labelBatch: z.number().int().min(1),
  reasonBatch: z.number().int().min(1),
  clusterChunk: z.number().int().min(1),
  assignBatch: z.number().int().min(1),
  maxClusters: z.number().int().min(1),
  callConcurrency: z.number().int().min(1),
});
export type PipelineSettings = z.infer<typeof PipelineSettingsSchema>;

/** Where each stage sits on the job's overall progress (labelling dominates the calls). */
const STAGE_SPAN: Record<ScreeningStage, [number, number]> = {
  labelling: [0, 0.6],
  reasoning: [0.6, 0.85],
  clustering: [0.85, 0.93],
  assignment: [0.93, 0.99],
};

/**
 * Runs the four stages of one screening job and returns its per-paper results (built chunk by
 * chunk when the worker stores them) and clusters. `createModel` picks the live or the mock model.
 *
 * Memory stays flat in the job's size: papers are read from the stored input chunk by chunk as the
 * calls need them (once for labelling, once more for reasoning), labelling keeps only packed votes
 * (`LabelTable`), reasoning only the reasons, which clustering and assignment need; no stage holds
 * the papers' texts.
 */
export async function runScreeningPipeline(
  job: JobContext,
  createModel: (frame: JobFrame, params: ScreeningJobParams) => ScreeningModel,
  defaults: PipelineSettings,
): Promise<JobOutcome> {
  const params = ScreeningJobParams.parse(job.params);
  // Batch sizes are fixed at admission: a redelivered job must cut the same checkpoint units.
  const settings: PipelineSettings = { ...defaults, ...PipelineSettingsSchema.partial().parse(job.params.pipeline ?? {}) };
  const { head, count } = await job.inputHead<Partial<Omit<ScreeningJobInput, "papers">>>("papers");
  const criteria = head.criteria ?? [];
  const questions = head.questions ?? [];
  const frame: JobFrame = { criteria, questions, model: params.model };
  const meter = new CostMeter(CostCeiling.optional().parse(job.params.cost_ceiling));
  const usage = new UsageMeter((stage, used) => meter.add(stage, used));
  const model = createModel(frame, params);
  const ctx: StageContext = {
    job,
    model,
    concurrency: settings.callConcurrency,
    usage,
    progress: (stage, done, total) => {
      const [from, to] = STAGE_SPAN[stage];
      const fraction = total > 0 ? Math.min(1, done / total) : 0;
      return job.report({ stage, progress: from + (to - from) * fraction, extra: { usage: usage.total() } });
    },
  };

  const table = new LabelTable(count, criteria);
  const reasons: string[] = new Array<string>(count).fill("");
  // Over its cost ceiling, the job ends failed with what it finished (stored with the failed job).
  const stopAtCeiling = (error: unknown): never => {
    if (!(error instanceof CostCeilingExceeded)) throw error;
    const labelled: JsonRecord[] = [];
    for (let i = 0; i < count; i++) if (table.labelled(i)) labelled.push(table.result(i, params.threshold, reasons[i]!, -1) as unknown as JsonRecord);
    throw new PartialFailure(error.failure(`${labelled.length} of ${count} papers were labelled`), {
      items: labelled,
      extra: { usage: usage.total(), usage_by_stage: usage.byStage },
    });
  };
  await labelPapers(ctx, job.inputItems<ScreeningPaper>("papers"), count, params.repetitions, settings.labelBatch, (i, paper, votes) =>
    table.set(i, paper.id, votes),
  ).catch(stopAtCeiling);
  await reasonPapers(
    ctx,
    job.inputItems<ScreeningPaper>("papers"),
    count,
    (i, paper) => ({
      paper: model.keepForReasoning(paper),
      decision: table.decision(i, params.threshold),
      includeVotes: table.score(i),
      repetitions: params.repetitions,
      verdicts: table.majority(i),
    }),
    settings.reasonBatch,
    (i, reason) => (reasons[i] = reason),
  ).catch(stopAtCeiling);

  // The clustered side (spec): include → score ≥ threshold, exclude → below it, absent → every paper.
  const clustered: number[] = [];
  for (let i = 0; i < count; i++) if (params.clusters_type === null || table.decision(i, params.threshold) === params.clusters_type) clustered.push(i);
  const clusteredReasons = clustered.map((i) => reasons[i]!);
  const themes = await clusterReasons(ctx, clusteredReasons, settings.clusterChunk, settings.maxClusters).catch(stopAtCeiling);
  const assignment = await assignClusters(ctx, clusteredReasons, themes, settings.assignBatch).catch(stopAtCeiling);
  const clusterIds = new Int32Array(count).fill(-1);
  clustered.forEach((paperIndex, k) => (clusterIds[paperIndex] = assignment.clusterIds[k] ?? -1));

  const items: ItemChunks = {
    count: Math.ceil(count / ITEM_CHUNK),
    chunk: (n) => {
      const out: JsonRecord[] = [];
      for (let i = n * ITEM_CHUNK; i < Math.min(count, (n + 1) * ITEM_CHUNK); i++) {
        out.push(table.result(i, params.threshold, reasons[i]!, clusterIds[i]!) as unknown as JsonRecord);
      }
      return out;
    },
  };
  return {
    items,
    result: { clusters: assignment.clusters },
    extra: { usage: usage.total(), usage_by_stage: usage.byStage },
  };
}
