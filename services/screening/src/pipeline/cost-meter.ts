import { z } from "zod";
import { ServiceError, type ScreeningStage } from "@litrev/contracts";
import type { StageUsage } from "./types";

/**
 * A job's cost ceiling as admission fixed it into the job's params: `max_estimated_cost_usd` and
 * the price (USD per 1M tokens) its model had then, used for a call whose reply could not be
 * priced (an alias remapped to an unpriced model mid-run), so no call goes unmetered.
 */
export const CostCeiling = z.object({
  usd: z.number().min(0),
  price: z.object({ input: z.number().min(0), cachedInput: z.number().min(0), output: z.number().min(0) }),
});
export type CostCeiling = z.infer<typeof CostCeiling>;

export function costCeiling(usd: number, price: CostCeiling["price"]): CostCeiling {
  return { usd, price: { input: price.input, cachedInput: price.cachedInput, output: price.output } };
}

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
    this.#spent += usage.cost_usd > 0 ? usage.cost_usd : priced(usage, this.ceiling.price);
    if (this.#spent > this.ceiling.usd) throw new CostCeilingExceeded(this.#spent, this.ceiling.usd, stage);
  }
}

function priced(usage: StageUsage, price: CostCeiling["price"]): number {
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens);
  return ((usage.input_tokens - cached) * price.input + cached * price.cachedInput + usage.output_tokens * price.output) / 1_000_000;
}
