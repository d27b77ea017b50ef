import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";

// One-shot hashing: on every request, so the Hash object of createHash() is worth saving.
const digest = (value: string) => hash("sha256", value, "buffer");

/**
 * Checks service keys without keeping them in clear text: only SHA-256 digests are held, and
 * every configured digest is compared in constant time (no early exit), so neither timing nor
 * a heap dump reveals a key.
 */
export function createKeyVerifier(keys: readonly string[]): (presented: string | undefined) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    if (!presented) return false;
    const candidate = digest(presented);
    let match = false;
    for (const known of digests) match = timingSafeEqual(known, candidate) || match;
    return match;
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
