import pRetry from "p-retry";
import { ServiceError } from "@litrev/contracts";

export interface RetryOptions {
  /** Give up once this much time has passed (default 60 s: a NATS server restart takes a few seconds). */
  budgetMs?: number;
  /** Stop retrying once aborted. */
  signal?: AbortSignal | undefined;
  /** Errors that end the retries at once (besides non-retryable ServiceErrors). */
  isFinal?: (error: unknown) => boolean;
}

/**
 * The one retry policy of the job machinery: exponential backoff from 200 ms to 2 s with jitter
 * until the budget runs out, for the NATS and database calls that ride out a brief outage. A
 * ServiceError that is not retryable (an input that no longer exists) is final at once.
 */
export function retrying<T>(operation: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const { budgetMs = 60_000, signal, isFinal } = options;
  return pRetry(operation, {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: 200,
    maxTimeout: 2_000,
    factor: 2,
    randomize: true,
    maxRetryTime: budgetMs,
    signal,
    shouldRetry: ({ error }) => !(error instanceof ServiceError && !error.retryable) && !isFinal?.(error),
  });
}
