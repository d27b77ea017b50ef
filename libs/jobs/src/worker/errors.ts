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
