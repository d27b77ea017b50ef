import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { headers, ServiceError } from "@litrev/contracts";

// One-shot hashing: on every request, so the Hash object of createHash() is worth saving.
const digest = (value: string) => hash("sha256", value, "buffer");

/** `admin` may also change configuration; `use` may call every other route (docs/security.md). */
type KeyRole = "admin" | "use";

/** A configured service key: whose it is (the owner id of the jobs it creates) and what it may do. */
export interface ServiceKey {
  key: string;
  owner: string;
  role: KeyRole;
}

/** Who a request comes from, once its key checked out. Never holds the key itself. */
export interface Principal {
  owner: string;
  role: KeyRole;
}

/**
 * Identifies service keys without keeping them in clear text: only SHA-256 digests are held, and
 * every configured digest is compared in constant time (no early exit), so neither timing nor a
 * heap dump reveals a key.
 */
export function createKeyring(keys: readonly ServiceKey[]): (presented: string | undefined) => Principal | null {
  const entries = keys.map(({ key, owner, role }) => ({ digest: digest(key), principal: Object.freeze({ owner, role }) }));
  return (presented) => {
    if (!presented) return null;
    const candidate = digest(presented);
    let found: Principal | null = null;
    for (const entry of entries) {
      const match = timingSafeEqual(entry.digest, candidate);
      found = match ? entry.principal : found;
    }
    return found;
  };
}

/** The service key from `X-API-Key` or `Authorization: Bearer`. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  if (typeof header === "string" && header) return header;
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim() || undefined;
}

/** Longer than any provider's key (OpenAI's are under 200 characters): more is an attack or a mistake. */
const MAX_PROVIDER_KEY_CHARS = 512;

/**
 * The client's provider key, if it sent one: the one place a request's provider key is read. It
 * comes as `X-LLM-API-Key` or, as the original system's clients send it, `X-OpenAI-API-Key`; two
 * different keys are refused (400) rather than one silently chosen, and an over-long one is the
 * spec's field-level 400, never sealed or forwarded. It is sealed before it goes anywhere.
 */
export function providerKeyOf(request: FastifyRequest): string | undefined {
  const spec = headerValue(request, headers.providerKey);
  const alias = headerValue(request, headers.providerKeyAlias);
  if (spec && alias && !timingSafeEqual(digest(spec), digest(alias))) {
    throw new ServiceError("validation", "X-LLM-API-Key and X-OpenAI-API-Key carry different provider keys: send one of them", { simple: true });
  }
  return spec ?? alias;
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const key = typeof value === "string" ? value.trim() : "";
  if (key.length > MAX_PROVIDER_KEY_CHARS) {
    throw new ServiceError("validation", "Request validation failed", {
      issues: [{ type: "string_too_long", loc: ["header", name], msg: `String should have at most ${MAX_PROVIDER_KEY_CHARS} characters` }],
    });
  }
  return key || undefined;
}
