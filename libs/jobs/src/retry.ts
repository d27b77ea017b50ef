import { ServiceError } from "@litrev/contracts";
import { realClock, retryWithPolicy, type RetryClock } from "@litrev/retry";

export interface RetryOptions {
  /** Give up once this much time has passed (default 60 s: a NATS server restart takes a few seconds). */
  budgetMs?: number;
  /** Stop retrying once aborted. */
  signal?: AbortSignal | undefined;
  /** Errors that end the retries at once (besides non-retryable ServiceErrors). */
  isFinal?: (error: unknown) => boolean;
  clock?: Partial<RetryClock> | undefined;
}

/** Backoff of the NATS and store calls: full jitter under a ceiling from 200 ms doubling to 2 s. */
export const INFRA_BACKOFF = Object.freeze({ baseDelayMs: 200, maxDelayMs: 2_000 });

/**
 * The project's one retry policy (`@litrev/retry`) set for the job machinery's NATS and database
 * calls, which ride out a brief outage: retried until the budget runs out. A ServiceError that is
 * not retryable (an input that no longer exists) is final at once.
 */
export function retrying<T>(operation: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { budgetMs = 60_000, signal, isFinal, clock } = options;
  return retryWithPolicy(operation, {
    deadlineAt: (clock?.now ?? realClock.now)() + budgetMs,
    backoff: INFRA_BACKOFF,
    signal,
    clock,
    isRetryable: (error) => !(error instanceof ServiceError && !error.retryable) && !isFinal?.(error),
  });
}
