import { z } from "zod";
import { ScreeningJobParams, type ScreeningJobInput, type ScreeningStage } from "@litrev/contracts";
import { PartialFailure, type JobContext, type JobOutcome, type JsonRecord } from "@litrev/jobs";
import { CostCeiling } from "@litrev/llm";
import { assignClusters } from "./assignment";
import { clusterReasons } from "./clustering";
import { CostCeilingExceeded, CostMeter } from "./cost-meter";
import { labelPapers } from "./labelling";
import { reasonPapers } from "./reasoning";
import { UsageMeter, type StageContext } from "./stage";
import { VERDICTS, type JobFrame, type LabelVote, type PaperResult, type ScreeningModel, type Verdict } from "./types";

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
 * Runs the four stages of one screening job and returns its per-paper results and clusters.
 * `createModel` picks the live or the mock model for the job.
 */
export async function runScreeningPipeline(
  job: JobContext,
  createModel: (frame: JobFrame, params: ScreeningJobParams) => ScreeningModel,
  defaults: PipelineSettings,
): Promise<JobOutcome> {
  const params = ScreeningJobParams.parse(job.params);
  // Batch sizes are fixed at admission: a redelivered job must cut the same checkpoint units.
  const settings: PipelineSettings = { ...defaults, ...PipelineSettingsSchema.partial().parse(job.params.pipeline ?? {}) };
  // The worker keeps the parsed input for the whole run, so the stages let text go by replacing
  // entries of `papers` (the input's own array): labelled papers shrink to what reasoning needs,
  // reasoned papers to their id, and the array is emptied before clustering.
  const input = await job.input<ScreeningJobInput>();
  const { papers, criteria, questions } = input;
  const frame: JobFrame = { criteria, questions, model: params.model };
  const meter = new CostMeter(CostCeiling.optional().parse(job.params.cost_ceiling));
  const usage = new UsageMeter((stage, used) => meter.add(stage, used));
  const ctx: StageContext = {
    job,
    model: createModel(frame, params),
    concurrency: settings.callConcurrency,
    usage,
    progress: (stage, done, total) => {
      const [from, to] = STAGE_SPAN[stage];
      const fraction = total > 0 ? Math.min(1, done / total) : 0;
      return job.report({ stage, progress: from + (to - from) * fraction, extra: { usage: usage.total() } });
    },
  };

  const results: PaperResult[] = new Array(papers.length);
  // Over its cost ceiling, the job ends failed with what it finished (stored with the failed job).
  const stopAtCeiling = (error: unknown): never => {
    if (!(error instanceof CostCeilingExceeded)) throw error;
    const labelled = results.filter(Boolean);
    throw new PartialFailure(error.failure(`${labelled.length} of ${results.length} papers were labelled`), {
      items: labelled as unknown as JsonRecord[],
      extra: { usage: usage.total(), usage_by_stage: usage.byStage },
    });
  };
  await labelPapers(ctx, papers, params.repetitions, settings.labelBatch, (i, votes) => {
    results[i] = labelledResult(papers[i]!.id, votes, criteria, params.threshold);
  }).catch(stopAtCeiling);
  await reasonPapers(
    ctx,
    papers,
    (i, paper) => ({
      paper,
      decision: results[i]!.decision,
      includeVotes: results[i]!.final_score,
      repetitions: params.repetitions,
      verdicts: results[i]!.criteria_verdicts.map((v) => v.verdict),
    }),
    settings.reasonBatch,
    (i, reason) => (results[i]!.reasoning = reason),
  ).catch(stopAtCeiling);
  papers.length = 0;

  // The clustered side (spec): include → score ≥ threshold, exclude → below it, absent → every paper.
  const clustered = results.flatMap((result, i) => (params.clusters_type === null || result.decision === params.clusters_type ? [i] : []));
  const reasons = clustered.map((i) => results[i]!.reasoning);
  const themes = await clusterReasons(ctx, reasons, settings.clusterChunk, settings.maxClusters).catch(stopAtCeiling);
  const assignment = await assignClusters(ctx, reasons, themes, settings.assignBatch).catch(stopAtCeiling);
  clustered.forEach((paperIndex, k) => (results[paperIndex]!.cluster_id = assignment.clusterIds[k] ?? -1));

  const total = usage.total();
  return {
    items: results as unknown as JsonRecord[],
    result: { clusters: assignment.clusters },
    extra: { usage: total, usage_by_stage: usage.byStage },
  };
}

/** A paper's result item as labelling leaves it: votes tallied, reasoning and cluster still to come. */
function labelledResult(id: PaperResult["id"], votes: LabelVote[], criteria: JobFrame["criteria"], threshold: number): PaperResult {
  const score = votes.filter((v) => v.include).length;
  const majority = majorityVerdicts(votes, criteria.length);
  return {
    id,
    final_score: score,
    cluster_id: -1,
    reasoning: "",
    decision: score >= threshold ? "include" : "exclude",
    votes: votes.map((v) => (v.include ? "include" : "exclude")),
    criteria_verdicts: criteria.map((criterion, c) => ({
      name: criterion.name,
      type: criterion.type,
      verdict: majority[c]!,
      ...tally(votes, c),
    })),
  };
}

function tally(votes: LabelVote[], criterion: number): Record<Verdict, number> {
  const counts: Record<Verdict, number> = { met: 0, not_met: 0, unclear: 0 };
  for (const vote of votes) {
    const verdict = vote.verdicts[criterion];
    if (verdict) counts[verdict]++;
  }
  return counts;
}

/** The most frequent verdict per criterion; ties resolve towards `unclear`, then `met`. */
function majorityVerdicts(votes: LabelVote[], criteria: number): Verdict[] {
  return Array.from({ length: criteria }, (_, c) => {
    const counts = tally(votes, c);
    const order: Verdict[] = ["unclear", "met", "not_met"];
    let best: Verdict = "unclear";
    for (const verdict of order) if (counts[verdict] > counts[best]) best = verdict;
    return VERDICTS.includes(best) ? best : "unclear";
  });
}
