import { ServiceError, type JobService } from "@litrev/contracts";

/** No longer than the job services' shortest Retry-After for storage: a client that waited as told is never refused from memory. */
const REMEMBER_MS = 5_000;
/** Owners remembered at once (the oldest is forgotten first): bounded whatever the number of owners. */
const MAX_OWNERS = 10_000;

interface Refusal {
  bytes: number;
  until: number;
  error: ServiceError;
}

/**
 * A job service's storage refusal of a creation (`OWNER_STORAGE_MB`), remembered per owner for a
 * few seconds, so that a creation of that owner at least as large is refused again before its body
 * is read, parsed and staged. Without it an owner over its quota makes the gateway do that work for
 * nothing as fast as its rate limit allows (issue 40: three creators of 1.2 MB bodies slowed another
 * owner's polls 3–6×; without them, 1.5–1.9×).
 */
export class StorageRefusals {
  readonly #byOwner = new Map<string, Refusal>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Remembers `error` when it is a storage refusal of a creation of `bytes` (its declared length). */
  note(service: JobService, owner: string, bytes: number | undefined, error: unknown): void {
    if (bytes === undefined || !(error instanceof ServiceError) || !error.message.includes("(OWNER_STORAGE_MB")) return;
    const key = `${service}\n${owner}`;
    this.#byOwner.delete(key);
    this.#byOwner.set(key, { bytes, until: this.now() + Math.min(REMEMBER_MS, error.retryAfterMs ?? REMEMBER_MS), error });
    if (this.#byOwner.size > MAX_OWNERS) this.#byOwner.delete(this.#byOwner.keys().next().value!);
  }

  /** The refusal to answer at once for a creation of `bytes` by `owner`, or null. */
  check(service: JobService, owner: string, bytes: number | undefined): ServiceError | null {
    const key = `${service}\n${owner}`;
    const refused = this.#byOwner.get(key);
    if (!refused || bytes === undefined) return null;
    const left = refused.until - this.now();
    if (left <= 0) {
      this.#byOwner.delete(key);
      return null;
    }
    if (bytes < refused.bytes) return null;
    const { category, message, simple } = refused.error;
    return new ServiceError(category, message, { ...(simple ? { simple } : {}), ...(category === "rate_limit" ? { retryAfterMs: left } : {}) });
  }
}

/** A request's declared body length, when it declares one. */
export function declaredBytes(contentLength: string | undefined): number | undefined {
  if (contentLength === undefined || !/^\d{1,15}$/.test(contentLength)) return undefined;
  return Number(contentLength);
}
