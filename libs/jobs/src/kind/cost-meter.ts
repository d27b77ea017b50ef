import { ServiceError, type LlmUsage } from "@litrev/contracts";
import { CostCeiling, meteredCost } from "@litrev/llm";

/** Thrown by the meter from the call that took the job's spending over its ceiling. */
export class CostCeilingExceeded extends Error {
  override readonly name = "CostCeilingExceeded";
  constructor(
    readonly spentUsd: number,
    readonly ceilingUsd: number,
    /** Where the run was, in the failure's words ("during labelling", "after 3 of 10 records"). */
    readonly where: string,
  ) {
    super(`cost ${spentUsd} over ceiling ${ceilingUsd} ${where}`);
  }

  /** The failed job's error: what was spent, the limit, where the run stopped and what it keeps. */
  failure(kept: string): ServiceError {
    return new ServiceError(
      "validation",
      `Stopped: the provider cost so far ($${this.spentUsd.toFixed(6)}, from the tokens the provider reported) exceeded ` +
        `the limit of $${this.ceilingUsd} (max_estimated_cost_usd) ${this.where}; ${kept}`,
    );
  }
}

/**
 * The running cost of one capped job, from the usage the provider reports on every call (the
 * admission estimate only gates the start). The run ends from the call that crosses the ceiling;
 * calls already in flight then finish, so a job overshoots by at most its concurrent calls.
 * Without a ceiling in the job's parameters nothing is metered.
 */
export class CostMeter {
  #spent = 0;

  constructor(private readonly ceiling: CostCeiling | undefined) {}

  /** The meter of a job whose admission put its ceiling (and the price then) in `params.cost_ceiling`. */
  static of(params: Record<string, unknown>): CostMeter {
    return new CostMeter(CostCeiling.optional().parse(params.cost_ceiling));
  }

  get spentUsd(): number {
    return this.#spent;
  }

  /** Counts one call's (or one restored checkpoint's) usage without judging it (restored checkpoints, before the run decides to go on). */
  count(usage: LlmUsage): void {
    if (this.ceiling) this.#spent += meteredCost(this.ceiling, usage);
  }

  /** Throws once the total is over the ceiling. */
  check(where: () => string): void {
    if (this.ceiling && this.#spent > this.ceiling.usd) throw new CostCeilingExceeded(this.#spent, this.ceiling.usd, where());
  }

  /** Counts one call's usage, then checks. */
  add(usage: LlmUsage, where: () => string): void {
    this.count(usage);
    this.check(where);
  }
}
