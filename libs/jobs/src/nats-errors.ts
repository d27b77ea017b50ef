import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { errors } from "@nats-io/transport-node";
import { ServiceError } from "@litrev/contracts";

/** JetStream answers recognised by the API error codes the client exposes, never by message text. */

/** The error or one of its causes, if it is of the given class. */
function find<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

const apiCode = (error: unknown) => find(error, JetStreamApiError)?.code;

/** A compare-and-set lost the race: KV `create` on an existing key, `update`/`delete` at a stale revision. */
export function isWrongRevision(error: unknown): boolean {
  const code = apiCode(error);
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
}

/** The message, stream or consumer asked for does not exist. */
export function isNotFound(error: unknown): boolean {
  const code = apiCode(error);
  return code === JetStreamApiCodes.NoMessageFound || code === JetStreamApiCodes.StreamNotFound || code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * A failed NATS/JetStream call on a request path as a retryable ServiceError (a raw TimeoutError
 * would otherwise reach a client as a 500 "unknown"). ServiceErrors pass through unchanged.
 */
export function unavailable(error: unknown, what: string): ServiceError {
  if (error instanceof ServiceError) return error;
  if (find(error, errors.TimeoutError)) {
    return new ServiceError("timeout", `${what} did not answer in time; retry shortly`, { cause: error });
  }
  return new ServiceError("service_unavailable", `${what} is unavailable; retry shortly`, { cause: error });
}
