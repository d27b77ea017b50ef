import { setTimeout as sleep } from "node:timers/promises";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

/**
 * JetStream answers recognised by their API error code (`JetStreamApiError.code`, or the raw
 * `api_error.err_code` when the error comes from another copy of the client module), never by text.
 */
export function apiCode(error: unknown): number | undefined {
  for (let e = error, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof JetStreamApiError) return e.code;
    const raw = (e as { api_error?: { err_code?: unknown } }).api_error?.err_code;
    if (typeof raw === "number") return raw;
  }
  return undefined;
}

/** A compare-and-set lost the race (KV create on an existing key, update/delete at a stale revision). */
export const isWrongLastSequence = (error: unknown) => {
  const code = apiCode(error);
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
};

/** The stream or message asked for does not exist. */
export const isStreamOrMessageNotFound = (error: unknown) => {
  const code = apiCode(error);
  return code === JetStreamApiCodes.StreamNotFound || code === JetStreamApiCodes.NoMessageFound;
};

/** A store call that did not finish in time (e.g. during a NATS outage): callers retry. */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
}

/**
 * `run()`'s value, or a StoreTimeoutError after `ms`: some client calls (consumers reading an
 * object or listing keys) would otherwise wait through an outage forever. The abandoned call is
 * left to finish or fail on its own; `onTimeout` may stop it.
 */
export async function withDeadline<T>(ms: number, what: string, run: () => Promise<T>, onTimeout?: () => void): Promise<T> {
  const timer = new AbortController();
  const expired = sleep(ms, undefined, { signal: timer.signal, ref: false }).then(
    () => {
      onTimeout?.();
      throw new StoreTimeoutError(`${what} did not finish within ${ms} ms`);
    },
    () => new Promise<never>(() => undefined), // cancelled: never settles, the race is decided
  );
  try {
    return await Promise.race([run(), expired]);
  } finally {
    timer.abort();
  }
}

/** A short, credential-free reason for readiness (`error: …`). */
export function shortReason(error: unknown): string {
  if (error instanceof StoreTimeoutError) return "no answer in time";
  const code = apiCode(error);
  if (code !== undefined) return `JetStream API error ${code}`;
  const name = (error as Error)?.name;
  if (name === "TimeoutError") return "no answer in time";
  if (name === "ClosedConnectionError") return "connection closed";
  if (name === "NoRespondersError") return "JetStream not answering";
  return name && name !== "Error" ? name : "unavailable";
}
