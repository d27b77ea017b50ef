import { ServiceError, type ScreeningStage } from "@litrev/contracts";
import { meteredCost, type CostCeiling } from "@litrev/llm";
import type { StageUsage } from "./types";

/** Thrown by the meter from the call that took the job's spending over its ceiling. */
export class CostCeilingExceeded extends Error {
  override readonly name = "CostCeilingExceeded";
  constructor(
    readonly spentUsd: number,
    readonly ceilingUsd: number,
    readonly stage: ScreeningStage,
  ) {
    super(`cost ${spentUsd} over ceiling ${ceilingUsd} during ${stage}`);
  }

  /** The failed job's error: what was spent, the limit, and where the run stopped. */
  failure(done: string): ServiceError {
    return new ServiceError(
      "validation",
      `Stopped: the provider cost so far ($${this.spentUsd.toFixed(6)}, from the tokens the provider reported) exceeded ` +
        `the limit of $${this.ceilingUsd} (max_estimated_cost_usd) during ${this.stage}; ${done}. The progress reached is kept.`,
    );
  }
}

/**
 * The running cost of one job, from the token usage the provider reports on every call (the
 * admission estimate only gates the start). It ends the run from the call that crosses the
 * ceiling; calls already in flight then finish, so a job can overshoot by at most the cost of
 * the job's concurrent calls (SCREENING_CALL_CONCURRENCY), never by another batch.
 */
export class CostMeter {
  #spent = 0;

  constructor(private readonly ceiling: CostCeiling | undefined) {}

  get spentUsd(): number {
    return this.#spent;
  }

  /** Counts one call's (or one restored checkpoint's) usage; throws once the total is over the ceiling. */
  add(stage: ScreeningStage, usage: StageUsage): void {
    if (!this.ceiling) return;
    this.#spent += meteredCost(this.ceiling, {
      costUsd: usage.cost_usd,
      inputTokens: usage.input_tokens,
      cachedInputTokens: usage.cached_input_tokens,
      outputTokens: usage.output_tokens,
    });
    if (this.#spent > this.ceiling.usd) throw new CostCeilingExceeded(this.#spent, this.ceiling.usd, stage);
  }
}
