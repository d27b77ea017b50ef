import { ServiceError } from "@litrev/contracts";

/** Recognising JetStream answers by what they mean, not by class (they differ across client modules). */

/** A compare-and-set lost the race: KV `create` on an existing key, `update`/`delete` at a stale revision. */
export function isWrongRevision(error: unknown): boolean {
  const text = describe(error);
  return /wrong last sequence|key exists|10071/i.test(text);
}

/** The message, stream or consumer asked for does not exist. */
export function isNotFound(error: unknown): boolean {
  const text = describe(error);
  return /no message found|not found|10037|10059|10014/i.test(text);
}

function describe(error: unknown): string {
  if (!error || typeof error !== "object") return String(error);
  const e = error as { message?: string; code?: unknown; api_error?: { err_code?: number; description?: string }; cause?: unknown };
  const parts = [e.message ?? "", String(e.code ?? ""), String(e.api_error?.err_code ?? ""), e.api_error?.description ?? ""];
  if (e.cause && e.cause !== error) parts.push(describe(e.cause));
  return parts.join(" ");
}

/**
 * A failed NATS/JetStream call on a request path as a retryable ServiceError (a raw TimeoutError
 * would otherwise reach a client as a 500 "unknown"). ServiceErrors pass through unchanged.
 */
export function unavailable(error: unknown, what: string): ServiceError {
  if (error instanceof ServiceError) return error;
  if (/timeout/i.test(`${(error as Error)?.name ?? ""} ${describe(error)}`)) {
    return new ServiceError("timeout", `${what} did not answer in time; retry shortly`, { cause: error });
  }
  return new ServiceError("service_unavailable", `${what} is unavailable; retry shortly`, { cause: error });
}
