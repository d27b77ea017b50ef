import pLimit from "p-limit";
import { z } from "zod";
import {
  ScreeningJobParams,
  ServiceError,
  type LlmUsage,
  type Provenance,
  type ScreeningJobInput,
  type ScreeningPaper,
  type ScreeningStage,
} from "@litrev/contracts";
import {
  cancellationOf,
  CostCeilingExceeded,
  CostMeter,
  ITEM_CHUNK,
  jobReportExtras,
  PartialFailure,
  type ItemChunks,
  type JobContext,
  type JobOutcome,
  type JsonRecord,
} from "@litrev/jobs";
import { assignClusters } from "./assignment";
import { clusterReasons } from "./clustering";
import { LabelTable } from "./label-table";
import { labelPapers } from "./labelling";
import { reasonPapers } from "./reasoning";
import { SettledPrefix } from "./settled-prefix";
import { UsageMeter, type StageContext } from "./stage";
import type { JobFrame, ScreeningModel } from "./types";

const PipelineSettingsSchema = z.object({
  labelBatch: z.number().int().min(1),
  reasonBatch: z.number().int().min(1),
  clusterChunk: z.number().int().min(1),
  assignBatch: z.number().int().min(1),
  maxClusters: z.number().int().min(1),
  callConcurrency: z.number().int().min(1),
  /**
   * Set at admission when the provider is known to ignore `n` (each vote a request of its own): the
   * votes of a paper are sent with different batch-mates (`vote-groups.ts`), fixed for redeliveries.
   */
  spreadVotes: z.boolean().optional(),
  /** The share of papers the model may lose (no full set of votes) before the job fails (MAX_LOST_PAPER_SHARE). */
  maxLostShare: z.number().min(0).max(1).optional(),
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
  /** The job's provenance as this run calls the model (`models_used` is filled in from the replies). */
  describe?: (frame: JobFrame, params: ScreeningJobParams) => Provenance,
): Promise<JobOutcome> {
  const params = ScreeningJobParams.parse(job.params);
  // Batch sizes are fixed at admission: a redelivered job must cut the same checkpoint units.
  const settings: PipelineSettings = { ...defaults, ...PipelineSettingsSchema.partial().parse(job.params.pipeline ?? {}) };
  const maxLostShare = settings.maxLostShare ?? DEFAULT_MAX_LOST_PAPER_SHARE;
  const { head, count } = await job.inputHead<Partial<Omit<ScreeningJobInput, "papers">>>("papers");
  const criteria = head.criteria ?? [];
  const questions = head.questions ?? [];
  const frame: JobFrame = { criteria, questions, model: params.model, resolvedModel: params.model_resolved };
  // Ends the run from the call that crosses the ceiling: at most SCREENING_CALL_CONCURRENCY calls overshoot it.
  const meter = CostMeter.of(job.params);
  const usage = new UsageMeter((stage, used) => meter.add(used, () => `during ${stage}`));
  const model = createModel(frame, params);
  const provenance = describe?.(frame, params);
  // Usage, actual cost and provenance travel in the live state (polls of a running job) and stay in the stored row.
  const reportExtras = () => jobReportExtras(usage.total(), provenance, !params.mock && params.priced !== false);
  const ctx: StageContext = {
    job,
    model,
    concurrency: settings.callConcurrency,
    calls: pLimit(settings.callConcurrency),
    capped: job.params.cost_ceiling !== undefined,
    usage,
    progress: (stage, done, total) => {
      const [from, to] = STAGE_SPAN[stage];
      const fraction = total > 0 ? Math.min(1, done / total) : 0;
      return job.report({ stage, progress: from + (to - from) * fraction, extra: reportExtras() });
    },
  };

  const table = new LabelTable(count, criteria);
  const reasons: string[] = new Array<string>(count).fill("");
  // Papers the model kept losing (fewer votes than asked, even asked about alone): index → votes it
  // got. Each goes to a human; more than `maxLostShare` of the job's papers fails the job.
  const lost = new Map<number, number>();
  let trouble: string | undefined;
  const resultOf = (i: number, clusterId: number): JsonRecord => {
    const result = table.result(i, params.threshold, reasons[i]!, clusterId);
    const votes = lost.get(i);
    if (votes === undefined) return result as unknown as JsonRecord;
    const error = lostPaperError(reported(), votes, params.repetitions);
    return { ...result, final_score: null, decision: "include", reasoning: LOST_REASONING, cluster_id: -1, error } as unknown as JsonRecord;
  };
  // A job that stops early ends failed with what it finished (stored with the failed job).
  const failWithLabelled = (failure: (labelled: number) => ServiceError): never => {
    const labelled: JsonRecord[] = [];
    for (let i = 0; i < count; i++) if (table.labelled(i)) labelled.push(resultOf(i, -1));
    throw new PartialFailure(failure(labelled.length), { items: labelled, extra: { ...reportExtras(), usage_by_stage: usage.byStage } });
  };
  const stopAtCeiling = (error: unknown): never => {
    // A cancelled job keeps the papers labelled so far, like one stopped at its ceiling.
    const cancelled = cancellationOf(job.signal);
    if (cancelled) return failWithLabelled(() => cancelled);
    if (!(error instanceof CostCeilingExceeded)) throw error;
    return failWithLabelled((labelled) => error.failure(`${labelled} of ${count} papers were labelled. The progress reached is kept.`));
  };
  const reported = () => reportedModels(usage.total(), params.model_resolved ?? params.model);
  // Where votes are separate requests, each vote of a paper goes with other batch-mates. Declared
  // at admission (LLM_PROVIDER_N), else known from what was learned or from a probe sent now, so
  // a fresh stack's first job is already cut that way.
  let spreadVotes = settings.spreadVotes === true;
  if (!spreadVotes && params.repetitions > 1 && model.providerIgnoresN) {
    // Metered like a labelling call: the probe was paid for, and may be what crosses the ceiling.
    const probe = await model
      .providerIgnoresN()
      .then((found) => {
        if (found.usage.calls > 0) usage.add("labelling", found.usage);
        return found;
      })
      .catch(stopAtCeiling);
    spreadVotes = probe.value;
  }
  // Labelling and reasoning overlap: a reasoning batch is sent once its papers are labelled, through
  // the same window of calls, so the window stays full across the change of stage. Reasoning reports
  // its progress once labelling is over (the job is in one stage at a time). Either stage's failure
  // stops the other (after its calls in flight settle) and ends the job as it did before.
  const prefix = new SettledPrefix(count);
  const reasoningFailed = new AbortController();
  const labelCtx: StageContext = { ...ctx, job: { ...job, signal: AbortSignal.any([job.signal, reasoningFailed.signal]) } };
  let labellingOver = false;
  let reasoned = 0;
  // Clustering's map overlaps the end of reasoning the same way (each chunk sent once its reasons are written).
  const written = new SettledPrefix(count);
  const clusteringFailed = new AbortController();
  let reasoningOver = false;
  const reasonCtx: StageContext = {
    ...ctx,
    job: { ...job, signal: AbortSignal.any([job.signal, clusteringFailed.signal]) },
    progress: (stage, done, total) => (labellingOver ? ctx.progress(stage, done, total) : Promise.resolve()),
  };
  const clusterCtx: StageContext = { ...ctx, progress: (stage, done, total) => (reasoningOver ? ctx.progress(stage, done, total) : Promise.resolve()) };
  const labelling = labelPapers(
    labelCtx,
    job.inputItems<ScreeningPaper>("papers"),
    count,
    params.repetitions,
    settings.labelBatch,
    spreadVotes && params.repetitions > 1,
    (i, paper, votes, why) => {
      table.set(i, paper.id, votes);
      prefix.settle(i);
      if (votes.length >= params.repetitions) return;
      lost.set(i, votes.length);
      trouble ??= why;
    },
    () => {
      if (lost.size <= maxLostShare * count) return;
      failWithLabelled(() => tooManyLost(reported(), lost.size, count, maxLostShare, trouble));
    },
  ).then(
    async () => {
      labellingOver = true;
      if (lost.size > 0) job.logger.warn({ lost: lost.size, papers: count }, "papers the model kept losing go to a human");
      await ctx.progress("reasoning", reasoned, count);
    },
    (error: unknown) => {
      prefix.fail(error);
      throw error;
    },
  );
  const reasoning = reasonPapers(
    reasonCtx,
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
    (i, reason) => {
      reasons[i] = reason;
      reasoned++;
      written.settle(i);
    },
    (end) => prefix.until(end),
  ).then(
    async () => {
      reasoningOver = true;
      await clusterCtx.progress("clustering", 0, 1);
    },
    (error: unknown) => {
      reasoningFailed.abort(error);
      written.fail(error);
      throw error;
    },
  );
  // Awaited only once labelling settles. A cancel can end reasoning first while labelling still
  // waits on a write that does not stop on the signal, and a rejection nobody handles yet would end
  // the whole process (Node's default): handled here, its outcome read below.
  reasoning.catch(() => undefined);
  const [labelled] = await Promise.allSettled([labelling]);
  if (labelled.status === "rejected") {
    await reasoning.catch(() => undefined);
    return stopAtCeiling(labelled.reason);
  }

  // The clustered side (spec): include → score ≥ threshold, exclude → below it, absent → every paper.
  const clustered: number[] = [];
  for (let i = 0; i < count; i++) {
    if (lost.has(i)) continue; // a lost paper has no reasoning of its own to cluster
    if (params.clusters_type === null || table.decision(i, params.threshold) === params.clusters_type) clustered.push(i);
  }
  const clustering = clusterReasons(
    clusterCtx,
    {
      count: clustered.length,
      slice: (start, end) => clustered.slice(start, end).map((i) => reasons[i]!),
      ready: (end) => written.until(clustered[end - 1]! + 1),
    },
    settings.clusterChunk,
    settings.maxClusters,
  ).catch((error: unknown) => {
    clusteringFailed.abort(error);
    throw error;
  });
  const [explained, clusteredThemes] = await Promise.allSettled([reasoning, clustering]);
  if (explained.status === "rejected") return stopAtCeiling(explained.reason);
  if (clusteredThemes.status === "rejected") return stopAtCeiling(clusteredThemes.reason);
  const themes = clusteredThemes.value;
  const clusteredReasons = clustered.map((i) => reasons[i]!);
  const assignment = await assignClusters(ctx, clusteredReasons, themes, settings.assignBatch).catch(stopAtCeiling);
  const clusterIds = new Int32Array(count).fill(-1);
  clustered.forEach((paperIndex, k) => (clusterIds[paperIndex] = assignment.clusterIds[k] ?? -1));

  const items: ItemChunks = {
    count: Math.ceil(count / ITEM_CHUNK),
    chunk: (n) => {
      const out: JsonRecord[] = [];
      for (let i = n * ITEM_CHUNK; i < Math.min(count, (n + 1) * ITEM_CHUNK); i++) out.push(resultOf(i, clusterIds[i]!));
      return out;
    },
  };
  return {
    items,
    result: { clusters: assignment.clusters },
    extra: { ...reportExtras(), usage_by_stage: usage.byStage },
  };
}

/** MAX_LOST_PAPER_SHARE's default: a job fails when the model loses more than a quarter of its papers. */
export const DEFAULT_MAX_LOST_PAPER_SHARE = 0.25;

/** The reasoning of a paper the model lost (its `error` says what happened). */
const LOST_REASONING = "Not screened by the model: it gave no usable decision for this paper. A reviewer should screen it.";

/** The models the provider reported for the job's calls so far, else the one it was pinned to. */
function reportedModels(total: LlmUsage, pinned: string): string {
  const models = Object.keys(total.models ?? {});
  return models.length > 0 ? models.map((m) => `'${m}'`).join(", ") : `'${pinned}'`;
}

function lostPaperError(model: string, votes: number, repetitions: number): string {
  return (
    `The model ${model} gave ${votes} of ${repetitions} votes for this paper: its replies kept leaving the paper out or ` +
    `naming ids that were not asked about, even when asked about this paper alone. Decision set to include so that a reviewer screens it.`
  );
}

function tooManyLost(model: string, lost: number, total: number, share: number, trouble: string | undefined): ServiceError {
  return new ServiceError(
    "model_output",
    `The model ${model} lost ${lost} of ${total} papers, more than the ${Math.round(share * 1000) / 10}% MAX_LOST_PAPER_SHARE allows: ` +
      `${trouble ?? "its replies did not answer for them"}. Papers left out were asked about again, then one paper per call, without a usable answer. ` +
      `A stronger model, or a smaller SCREENING_LABEL_BATCH, may do better.`,
  );
}
