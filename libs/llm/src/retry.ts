import { ServiceError, type ErrorCategory } from "@litrev/contracts";
import { realClock, retryWithPolicy, type RetryClock } from "@litrev/retry";
import { LlmAbortError, classifyProviderError } from "./errors";
import { errorHeaders, retryAfterMs } from "./headers";

/** Failures that clear by themselves. auth, validation and quota never do, so they fail at once. */
export const RETRIED_CATEGORIES: ReadonlySet<ErrorCategory> = new Set(["rate_limit", "provider_unavailable", "timeout"]);

export interface RetryPolicy {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** Budget for all attempts and waits of one call; a wait that would overrun it is not started. */
  deadlineMs: number;
  /** First backoff ceiling; doubles per attempt (full jitter picks uniformly below it). */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 6,
  deadlineMs: 120_000,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
});

/** Time and randomness, injectable so tests can check the schedule without waiting for it. */
export type { RetryClock } from "@litrev/retry";

export interface AttemptContext {
  /** 1 for the first attempt. */
  attempt: number;
  /** Fires on the caller's cancellation or at the deadline; pass it to the request. */
  signal: AbortSignal;
  /** Time left before the deadline, for the request's own timeout. */
  remainingMs: number;
}

export interface RetryInfo {
  attempt: number;
  delayMs: number;
  error: ServiceError;
}

export interface RetryOptions extends Partial<RetryPolicy> {
  /**
   * Absolute end (on the clock) when the budget started earlier than this call, e.g. a call made
   * of several requests; `deadlineMs` then only names the whole budget in the timeout message.
   */
  deadlineAt?: number | undefined;
  signal?: AbortSignal | undefined;
  onRetry?: ((info: RetryInfo) => void) | undefined;
  clock?: Partial<RetryClock> | undefined;
}

export function deadlineError(deadlineMs: number, cause?: unknown): ServiceError {
  return new ServiceError("timeout", `The language-model call did not complete within ${Math.round(deadlineMs / 100) / 10} s`, {
    cause,
  });
}

/**
 * A rate limit handed back to the caller carries when to try again, so the gateway can answer
 * with a Retry-After instead of the client guessing.
 */
export function withRetryAfter(error: ServiceError, delayMs: number | undefined): ServiceError {
  if (error.category !== "rate_limit" || error.retryAfterMs !== undefined) return error;
  return new ServiceError(error.category, error.message, {
    cause: error.cause,
    retryable: error.retryable,
    retryAfterMs: Math.max(1000, delayMs ?? 1000),
  });
}

/**
 * Runs `run` under the project's one retry policy (`@litrev/retry`; the SDK itself is built with
 * `maxRetries: 0`, since it cannot tell a rate limit from an exhausted quota): the provider's
 * categories retried, its Retry-After honoured, the deadline also stopping a request in flight.
 * Throws a ServiceError, or LlmAbortError when the caller cancels.
 */
export async function withRetry<T>(run: (context: AttemptContext) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
    deadlineMs: options.deadlineMs ?? DEFAULT_RETRY_POLICY.deadlineMs,
    baseDelayMs: options.baseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
  };
  const clock: RetryClock = { ...realClock, ...options.clock };
  const deadlineAt = options.deadlineAt ?? clock.now() + policy.deadlineMs;

  // One signal for the caller's cancellation and our deadline, so a request in flight and a
  // backoff sleep both stop the moment either fires.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), Math.max(0, deadlineAt - clock.now()));
  timer.unref?.();
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;

  let last: ServiceError | undefined;
  const interruption = (): Error | undefined => {
    if (options.signal?.aborted) return new LlmAbortError(options.signal.reason);
    if (deadline.signal.aborted) return deadlineError(policy.deadlineMs, last);
    return undefined;
  };
  /** What the provider asked to wait, from the error or its headers. */
  const askedMs = (error: ServiceError) => error.retryAfterMs ?? retryAfterMs(errorHeaders(error), clock.now());

  try {
    return await retryWithPolicy(
      async (attempt) => {
        try {
          return await run({ attempt, signal, remainingMs: Math.max(0, deadlineAt - clock.now()) });
        } catch (error) {
          const classified = classifyProviderError(error);
          if (classified instanceof ServiceError) last = classified;
          throw classified;
        }
      },
      {
        maxAttempts: policy.maxAttempts,
        deadlineAt,
        backoff: policy,
        isRetryable: (error) => error instanceof ServiceError && RETRIED_CATEGORIES.has(error.category),
        requestedDelayMs: (error) => (error instanceof ServiceError ? askedMs(error) : undefined),
        signal,
        clock,
        // Only retryable failures are retried, and those are ServiceErrors.
        onRetry: options.onRetry && ((info) => options.onRetry?.({ ...info, error: info.error as ServiceError })),
        // A rate limit handed back says when to try again; a timeout that cannot be retried in time is the spent budget.
        giveUp: (error, overrunMs) => {
          if (!(error instanceof ServiceError)) return error;
          if (overrunMs !== undefined && error.category === "timeout") return deadlineError(policy.deadlineMs, error);
          return withRetryAfter(error, overrunMs ?? askedMs(error));
        },
      },
    );
  } catch (error) {
    throw interruption() ?? error;
  } finally {
    clearTimeout(timer);
  }
}
