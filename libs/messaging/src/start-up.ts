import { JetStreamApiError } from "@nats-io/jetstream";
import { errors } from "@nats-io/transport-node";
import { retryWithPolicy } from "@litrev/retry";

/** The error or one of its causes, if it is of the given class. */
export function findCause<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/**
 * The messaging failed, not the work (a NATS request that timed out or found no responder, a
 * JetStream API error such as "temporarily unavailable"): on a NATS cluster, what a leader
 * election looks like for a few seconds.
 */
export function isInfrastructureFailure(error: unknown): boolean {
  return findCause(error, errors.TimeoutError) !== undefined || findCause(error, errors.NoRespondersError) !== undefined || findCause(error, JetStreamApiError) !== undefined;
}

/** How long a process keeps opening its streams and buckets at start-up before it gives up. */
export const START_UP_BUDGET_MS = 45_000;

export interface StartUpLog {
  warn(details: object, message: string): void;
}

/**
 * One start-up step on JetStream (open or create a stream or bucket, announce, watch), tried again
 * while JetStream does not answer: a process started while a NATS cluster elects its leaders (a
 * server restarted beside it) waits for them rather than exiting, and says so. Any other failure,
 * or one that outlasts the budget, ends the start as before.
 */
export function duringStartUp<T>(what: string, step: () => Promise<T>, log: StartUpLog, budgetMs = START_UP_BUDGET_MS): Promise<T> {
  return retryWithPolicy(step, {
    deadlineAt: Date.now() + budgetMs,
    backoff: { baseDelayMs: 250, maxDelayMs: 2_000 },
    isRetryable: isInfrastructureFailure,
    onRetry: ({ attempt, delayMs, error }) =>
      log.warn({ attempt, retry_in_ms: Math.round(delayMs), err: error instanceof Error ? error.message : String(error) }, `${what}: JetStream did not answer at start-up (a NATS cluster electing a leader?); trying again`),
  });
}
