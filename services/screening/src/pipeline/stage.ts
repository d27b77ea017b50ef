import type { JobContext } from "@litrev/jobs";
import type { LlmUsage, ScreeningStage } from "@litrev/contracts";
import { addUsage, ZERO_USAGE } from "@litrev/llm";
import type { ScreeningModel } from "./types";

/** What every stage gets: the job, the model port, a usage meter and a progress reporter. */
export interface StageContext {
  job: Pick<JobContext, "jobId" | "signal" | "checkpoints" | "leaseHeld" | "logger">;
  model: ScreeningModel;
  /** Provider calls in flight for this job. */
  concurrency: number;
  /**
   * A job with a cost ceiling (checked as each unit settles): its units keep their call slot until
   * settled, so at most `concurrency` calls are in flight when one crosses it.
   */
  capped: boolean;
  /** The job's one window of `concurrency` calls, shared by the stages that overlap (labelling and reasoning). */
  calls: <T>(call: () => Promise<T>) => Promise<T>;
  usage: UsageMeter;
  /** Reports `done` of `total` units of a stage (mapped onto the job's overall progress). */
  progress(stage: ScreeningStage, done: number, total: number): Promise<void>;
}

/** Sums usage per stage, including units restored from checkpoints (they were paid for once). */
export class UsageMeter {
  readonly byStage: Partial<Record<ScreeningStage, LlmUsage>> = {};

  /** `onAdd` sees every usage once counted (the job's cost meter throws from it to end the run). */
  constructor(private readonly onAdd?: (stage: ScreeningStage, usage: LlmUsage) => void) {}

  add(stage: ScreeningStage, usage: LlmUsage): void {
    this.byStage[stage] = addUsage(this.byStage[stage] ?? ZERO_USAGE, usage);
    this.onAdd?.(stage, usage);
  }

  total(): LlmUsage {
    return Object.values(this.byStage).reduce(addUsage, ZERO_USAGE);
  }
}
