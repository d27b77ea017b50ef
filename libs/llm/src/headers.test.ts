import { APIError } from "openai";
import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { errorHeaders, parseResetDuration, readRateLimitHeaders, retryAfterMs } from "./headers";

describe("parseResetDuration", () => {
  it.each([
    ["1s", 1000],
    ["120ms", 120],
    ["6m0s", 360_000],
    ["1.5s", 1500],
    ["1h2m3s", 3_723_000],
    ["17.283s", 17_283],
    ["2", 2000],
  ])("%s → %d ms", (text, ms) => {
    expect(parseResetDuration(text)).toBeCloseTo(ms, 6);
  });

  it.each(["", "soon", "5 minutes", "1x"])("rejects %j", (text) => {
    expect(parseResetDuration(text)).toBeUndefined();
  });
});

describe("retryAfterMs", () => {
  it("prefers retry-after-ms, then seconds, then an HTTP date", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250", "retry-after": "3" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "3" }))).toBe(3000);
    const now = Date.parse("2026-11-22T10:00:00Z");
    expect(retryAfterMs(new Headers({ "retry-after": "Sun, 22 Nov 2026 10:00:05 GMT" }), now)).toBe(5000);
    expect(retryAfterMs(new Headers({ "retry-after": "Sun, 22 Nov 2026 09:00:00 GMT" }), now)).toBe(0);
    expect(retryAfterMs(new Headers({}))).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe("readRateLimitHeaders", () => {
  it("reads OpenAI's six headers and ignores missing ones", () => {
    const headers = new Headers({
      "x-ratelimit-limit-requests": "5000",
      "x-ratelimit-remaining-requests": "4999",
      "x-ratelimit-reset-requests": "12ms",
      "x-ratelimit-limit-tokens": "2000000",
      "x-ratelimit-remaining-tokens": "1999000",
      "x-ratelimit-reset-tokens": "30ms",
    });
    expect(readRateLimitHeaders(headers)).toEqual({
      limitRequests: 5000,
      remainingRequests: 4999,
      resetRequestsMs: 12,
      limitTokens: 2_000_000,
      remainingTokens: 1_999_000,
      resetTokensMs: 30,
    });
    expect(readRateLimitHeaders(new Headers({ "x-ratelimit-remaining-requests": "0" }))).toEqual({ remainingRequests: 0 });
  });

  it("finds the response headers behind a classified error", () => {
    const sdkError = APIError.generate(429, { error: { message: "slow down" } }, undefined, new Headers({ "retry-after": "1" }));
    const wrapped = new ServiceError("rate_limit", "limited", { cause: sdkError });
    expect(errorHeaders(wrapped)?.get("retry-after")).toBe("1");
    expect(errorHeaders(new Error("no headers"))).toBeUndefined();
  });
});
