import { APIError } from "openai";

/** Anything with a case-insensitive `get`, e.g. fetch `Headers`. */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * Delay the provider asks for, in ms: `retry-after-ms` (OpenAI, Azure) wins over `retry-after`,
 * which is either seconds or an HTTP date.
 */
export function retryAfterMs(headers: HeaderReader | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after")?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number.parseFloat(raw) * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** OpenAI's reset durations: `1s`, `6m0s`, `120ms`, `1.5s`, `1h2m3s`; a bare number means seconds. */
export function parseResetDuration(value: string | null | undefined): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number.parseFloat(text) * 1000;
  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    total += Number.parseFloat(match[1] as string) * (unitMs[match[2] as string] as number);
    consumed += match[0].length;
  }
  return consumed === text.length ? total : undefined;
}

/** What a response said about the key's rate limits; absent or unparsable headers stay undefined. */
export interface RateLimitSnapshot {
  limitRequests?: number;
  remainingRequests?: number;
  resetRequestsMs?: number;
  limitTokens?: number;
  remainingTokens?: number;
  resetTokensMs?: number;
}

export function readRateLimitHeaders(headers: HeaderReader): RateLimitSnapshot {
  const snapshot: RateLimitSnapshot = {};
  const int = (name: string): number | undefined => {
    const value = Number.parseInt(headers.get(name) ?? "", 10);
    return Number.isFinite(value) && value >= 0 ? value : undefined;
  };
  const set = <K extends keyof RateLimitSnapshot>(key: K, value: number | undefined): void => {
    if (value !== undefined) snapshot[key] = value;
  };
  set("limitRequests", int("x-ratelimit-limit-requests"));
  set("remainingRequests", int("x-ratelimit-remaining-requests"));
  set("resetRequestsMs", parseResetDuration(headers.get("x-ratelimit-reset-requests")));
  set("limitTokens", int("x-ratelimit-limit-tokens"));
  set("remainingTokens", int("x-ratelimit-remaining-tokens"));
  set("resetTokensMs", parseResetDuration(headers.get("x-ratelimit-reset-tokens")));
  return snapshot;
}

/** Response headers of a failed call, looking through a ServiceError's cause to the SDK error. */
export function errorHeaders(error: unknown): HeaderReader | undefined {
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    if (current instanceof APIError && current.headers) return current.headers;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
