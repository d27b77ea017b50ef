import { ServiceError } from "@litrev/contracts";
import type { JobOutcome } from "./types";

/**
 * A failure that keeps what the job finished: thrown by a handler, it ends the job `failed` with
 * the cause's classification and stores `partial` as the failed job's results (the indexer shows a
 * failed job's finished records).
 */
export class PartialFailure extends Error {
  override readonly name = "PartialFailure";
  constructor(
    readonly failure: ServiceError,
    readonly partial: JobOutcome,
  ) {
    super(failure.message, { cause: failure });
  }
}

/** The abort reason of a run its client cancelled: the handler stops its calls in flight and keeps what finished. */
export class JobCancelled extends Error {
  override readonly name = "JobCancelled";
  constructor() {
    super("Cancelled by the client");
  }
}

/** How a cancelled job fails: `error_category` `cancelled`, never retried. */
export const cancelledFailure = (): ServiceError => new ServiceError("cancelled", "Cancelled by the client", { retryable: false });

/** The cancel failure when `signal` was aborted by the job's client, else null (a hand-back, a lost lease, no abort). */
export const cancellationOf = (signal: AbortSignal): ServiceError | null => (signal.aborted && signal.reason instanceof JobCancelled ? cancelledFailure() : null);
