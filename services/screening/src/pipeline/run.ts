import { z } from "zod";
import { ScreeningJobParams, type ScreeningJobInput, type ScreeningStage } from "@litrev/contracts";
import type { JobContext, JobOutcome } from "@litrev/jobs";
import { assignClusters } from "./assignment";
import { clusterReasons } from "./clustering";
import { labelPapers } from "./labelling";
import { reasonPapers } from "./reasoning";
import { UsageMeter, type StageContext } from "./stage";
import { VERDICTS, type JobFrame, type LabelVote, type ReasoningInput, type ScreeningModel, type Verdict } from "./types";

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
  const input = await job.input<ScreeningJobInput>();
  const { papers, criteria, questions } = input;
  const frame: JobFrame = { criteria, questions, model: params.model };
  const usage = new UsageMeter();
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

  const labels = await labelPapers(ctx, papers, params.repetitions, settings.labelBatch);
  const scores = labels.map((votes) => votes.filter((v) => v.include).length);
  const decisions = scores.map((score) => (score >= params.threshold ? "include" : "exclude") as "include" | "exclude");
  const majority = labels.map((votes) => majorityVerdicts(votes, criteria.length));

  const reasoningInputs: ReasoningInput[] = papers.map((paper, i) => ({
    paper,
    decision: decisions[i]!,
    includeVotes: scores[i]!,
    repetitions: params.repetitions,
    verdicts: majority[i]!,
  }));
  const reasons = await reasonPapers(ctx, papers, reasoningInputs, settings.reasonBatch);

  // The clustered side (spec): include → score ≥ threshold, exclude → below it, absent → every paper.
  const clustered = papers.map((_, i) => i).filter((i) => params.clusters_type === null || decisions[i] === params.clusters_type);
  const themes = await clusterReasons(ctx, clustered.map((i) => reasons[i]!), settings.clusterChunk, settings.maxClusters);
  const assignment = await assignClusters(ctx, clustered.map((i) => reasons[i]!), themes, settings.assignBatch);
  const clusterOf = new Map(clustered.map((paperIndex, k) => [paperIndex, assignment.clusterIds[k] ?? -1]));

  const items = papers.map((paper, i) => ({
    id: paper.id,
    final_score: scores[i]!,
    cluster_id: clusterOf.get(i) ?? -1,
    reasoning: reasons[i]!,
    decision: decisions[i]!,
    votes: labels[i]!.map((v) => (v.include ? "include" : "exclude")),
    criteria_verdicts: criteria.map((criterion, c) => ({
      name: criterion.name,
      type: criterion.type,
      verdict: majority[i]![c]!,
      ...tally(labels[i]!, c),
    })),
  }));
  const total = usage.total();
  return {
    items,
    result: { clusters: assignment.clusters },
    extra: { usage: total, usage_by_stage: usage.byStage },
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
