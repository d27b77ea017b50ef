import { ServiceError, type JobService } from "@litrev/contracts";

/**
 * At most this long, and never longer than the service's Retry-After (a client that waited as told
 * is never refused from memory): what frees an owner's storage sooner (a job of theirs ending or
 * deleted) makes every gateway forget the refusal at once (`forget`).
 */
const MAX_REMEMBER_MS = 60_000;
/** Owners remembered at once (the oldest is forgotten first): bounded whatever the number of owners. */
const MAX_OWNERS = 10_000;

/** One owner's refusals of one service, by this key; a service's keys all start with its own prefix. */
const prefixOf = (service: JobService) => `${service}\n`;
const keyOf = (service: JobService, owner: string) => `${prefixOf(service)}${owner}`;

interface Refusal {
  bytes: number;
  until: number;
  error: ServiceError;
}

/**
 * A job service's storage refusal of a creation (`OWNER_STORAGE_MB`), remembered per owner until
 * the service's Retry-After or until the gateway sees that owner's storage free, so that a creation
 * of that owner at least as large is refused again before its body is read, parsed and staged.
 * Without it an owner over its quota makes the gateway do that work for nothing as fast as its rate
 * limit allows (issue 40: three creators of 1.2 MB bodies slowed another owner's polls 3–6×; without
 * them, 1.5–1.9×; remembered 5 s, the 1.2 MB bodies still staged about 25 times in a 30 s attack).
 */
export class StorageRefusals {
  readonly #byOwner = new Map<string, Refusal>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Remembers `error` when it is a storage refusal of a creation of `bytes` (its declared length); true when it did. */
  note(service: JobService, owner: string, bytes: number | undefined, error: unknown): boolean {
    if (bytes === undefined || !(error instanceof ServiceError) || !error.message.includes("(OWNER_STORAGE_MB")) return false;
    const key = keyOf(service, owner);
    this.#byOwner.delete(key);
    this.#byOwner.set(key, { bytes, until: this.now() + Math.min(MAX_REMEMBER_MS, error.retryAfterMs ?? MAX_REMEMBER_MS), error });
    if (this.#byOwner.size > MAX_OWNERS) this.#byOwner.delete(this.#byOwner.keys().next().value!);
    return true;
  }

  /** Forgets the refusals of `owner` (null: of every owner) for `service`: their storage may have freed. */
  forget(service: JobService, owner: string | null): void {
    if (owner !== null) this.#byOwner.delete(keyOf(service, owner));
    else for (const key of this.#byOwner.keys()) if (key.startsWith(prefixOf(service))) this.#byOwner.delete(key);
  }

  /** The refusal to answer at once for a creation of `bytes` by `owner`, or null. */
  check(service: JobService, owner: string, bytes: number | undefined): ServiceError | null {
    const key = keyOf(service, owner);
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
