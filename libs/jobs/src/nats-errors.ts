import { JetStreamApiCodes, JetStreamApiError, JetStreamError } from "@nats-io/jetstream";
import { errors } from "@nats-io/transport-node";
import { ServiceError } from "@litrev/contracts";
import { findCause } from "@litrev/messaging";
import { retrying } from "./retry";

/** JetStream answers recognised by the API error codes the client exposes, never by message text. */

const find = findCause;

const apiCode = (error: unknown) => find(error, JetStreamApiError)?.code;

/**
 * Nobody took the request: on a NATS cluster, a stream between leaders (an election after its
 * leader died) or JetStream briefly unreachable. Nothing was stored, so a write may be sent again.
 */
export function isNoResponders(error: unknown): boolean {
  return find(error, errors.NoRespondersError) !== undefined;
}

/** This process closed its connection: nothing sent on it can succeed again. */
export function isConnectionClosed(error: unknown): boolean {
  return find(error, errors.ClosedConnectionError) !== undefined;
}

/** How long a write waits out a stream without a leader (an election takes a second or two). */
const ELECTION_BUDGET_MS = 5_000;

/** `write`, sent again while no stream leader takes it (see `isNoResponders`); other failures at once. */
export function throughElections<T>(write: () => Promise<T>): Promise<T> {
  return retrying(write, { budgetMs: ELECTION_BUDGET_MS, isFinal: (error) => !isNoResponders(error) });
}

/** A NATS or JetStream failure as a retryable ServiceError (see `unavailable`); anything else unchanged. */
export function asUnavailable(error: unknown, what: string): unknown {
  if (error instanceof ServiceError || !(error instanceof Error)) return error;
  const nats =
    find(error, JetStreamApiError) ?? find(error, JetStreamError) ?? find(error, errors.TimeoutError) ?? find(error, errors.NoRespondersError) ?? find(error, errors.ClosedConnectionError);
  return nats || error.name === "JetStreamNotEnabled" ? unavailable(error, what) : error;
}

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
