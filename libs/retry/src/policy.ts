import { setTimeout as delay } from "node:timers/promises";
import pRetry from "p-retry";

/** Time and randomness, injectable so tests can check a schedule without waiting for it. */
export interface RetryClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<unknown>;
  random(): number;
}

export const realClock: RetryClock = { now: Date.now, sleep: (ms, signal) => delay(ms, undefined, { signal }), random: Math.random };

export interface Backoff {
  /** First backoff ceiling; doubles per attempt. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Full jitter: uniform in [0, min(max, base·2^(attempt-1))), which spreads a herd of retries. */
export function backoffDelayMs(attempt: number, backoff: Backoff, random: () => number): number {
  return random() * Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** (attempt - 1));
}

export interface RetryInfo<E = unknown> {
  attempt: number;
  delayMs: number;
  error: E;
}

export interface RetryPolicyOptions {
  /** Attempts in total, the first included (default: no limit but the budget). */
  maxAttempts?: number | undefined;
  /** End of the budget on the clock; a wait that would reach it is not started. */
  deadlineAt: number;
  backoff: Backoff;
  /** Whether a failure may clear by itself; any other ends the retries at once. */
  isRetryable: (error: unknown) => boolean;
  /** A wait the other side asked for (Retry-After), which replaces the backoff. */
  requestedDelayMs?: ((error: unknown) => number | undefined) | undefined;
  /** Stops the retries and any wait at once (p-retry rejects with the signal's reason). */
  signal?: AbortSignal | undefined;
  clock?: Partial<RetryClock> | undefined;
  onRetry?: ((info: RetryInfo) => void) | undefined;
  /**
   * What to throw when the retries end on a failure: `overrunMs` is the wait that was not started
   * because it would pass the deadline (undefined when out of attempts or not retryable).
   */
  giveUp?: ((error: unknown, overrunMs: number | undefined) => unknown) | undefined;
}

/**
 * Runs `attempt` until it succeeds, under one policy: at most `maxAttempts`, waiting what the
 * failure asked for or else a jittered exponential backoff, never starting a wait that would pass
 * the deadline. p-retry counts attempts, stops on the signal and on a non-retryable failure; the
 * wait itself is ours (p-retry's own delay is zero) so it can honour Retry-After and run on an
 * injected clock.
 */
export async function retryWithPolicy<T>(attempt: (attemptNumber: number) => Promise<T>, options: RetryPolicyOptions): Promise<T> {
  const clock: RetryClock = { ...realClock, ...options.clock };
  const maxAttempts = Math.max(1, options.maxAttempts ?? Number.POSITIVE_INFINITY);
  let overrunMs: number | undefined;
  try {
    return await pRetry(attempt, {
      retries: maxAttempts - 1,
      minTimeout: 0,
      signal: options.signal,
      shouldRetry: async ({ error, attemptNumber }) => {
        if (!options.isRetryable(error)) return false;
        const delayMs = options.requestedDelayMs?.(error) ?? backoffDelayMs(attemptNumber, options.backoff, clock.random);
        // Waiting past the deadline only to fail later helps nobody: give up now.
        if (clock.now() + delayMs >= options.deadlineAt) {
          overrunMs = delayMs;
          return false;
        }
        options.onRetry?.({ attempt: attemptNumber, delayMs, error });
        await clock.sleep(delayMs, options.signal);
        return true;
      },
    });
  } catch (error) {
    // Cancelled, during an attempt or a wait: the signal's reason, as p-retry itself reports it.
    if (options.signal?.aborted) throw options.signal.reason;
    if (!options.giveUp) throw error;
    throw options.giveUp(error, overrunMs);
  }
}
