import { setTimeout as delay } from "node:timers/promises";
import { ServiceError } from "@litrev/contracts";
import { LlmAbortError } from "./errors";
import { type HeaderReader, readRateLimitHeaders, retryAfterMs } from "./headers";
import { shareOf, type BudgetShare } from "./shared-budget";

export interface LimiterOptions {
  /** Requests in flight at once for this key, by every replica that shares its budget together. */
  concurrency?: number | undefined;
  /** Fixed request rate for providers that send no rate-limit headers; overrides what headers say. */
  requestsPerMinute?: number | undefined;
  /** Fixed token rate, same idea; only applies when callers pass token estimates. */
  tokensPerMinute?: number | undefined;
  now?: (() => number) | undefined;
  /** The wait between paced sends (node:timers/promises by default; tests with fake timers pass their own). */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<unknown>) | undefined;
}

/**
 * A key's calls in flight across every replica that shares its budget: `npm start`'s three
 * provider-calling processes keep 16 each, as each had on its own before budgets were shared.
 */
export const DEFAULT_CONCURRENCY = 48;
/** Pause after a 429 that carries no hint of how long to wait. */
const DEFAULT_429_PAUSE_MS = 1000;
/**
 * How far the pace may lag behind the clock: after a lull (a job's start, the calls that wait on
 * one another at its end), a quarter of a second's worth of requests (and tokens) goes at once, then
 * the pace resumes. Over any window the key sends at most this much more than its rate: within what
 * providers hold, who enforce a per-minute limit over about a second (OpenAI's quantization:
 * 60,000 a minute as 1,000 a second; the project's fake provider: a bucket of one second's worth).
 */
export const PACE_BURST_MS = 250;

/** Held while a call is in flight; release exactly once. */
export interface Slot {
  release(): void;
}

interface Waiter {
  grant(): void;
}

/**
 * The admission control of ONE provider key, shared by every call made with that key:
 *
 * - a concurrency bound (a FIFO semaphore);
 * - pacing: requests are spaced at the key's rate, taken from `requestsPerMinute` or learned from
 *   `x-ratelimit-limit-*`, so a job of thousands of calls runs at the limit instead of bursting
 *   into it (providers enforce per-minute limits over short windows);
 * - pauses: a 429, or `x-ratelimit-remaining-* = 0`, holds every caller of the key until the
 *   provider's `retry-after` / reset time, instead of letting each caller bounce off the limit.
 *
 * Pacing works by reservation (each send books the next free instant), so waiters are served in
 * order and never wake in a herd; a key that was idle may send PACE_BURST_MS worth at once.
 *
 * The key's budget (concurrency and rates, configured or learned) is the whole key's: when several
 * replicas use the key, each limits itself to its share of it (`setShare`, kept current by the
 * replicas' shared membership in NATS), so that scaling out does not multiply the calls the
 * provider sees.
 */
export class RateLimiter {
  /** The key's whole concurrency budget, across replicas. */
  readonly keyConcurrency: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<unknown>;
  private readonly fixedRpm: number | undefined;
  private readonly fixedTpm: number | undefined;
  private learnedRpm: number | undefined;
  private learnedTpm: number | undefined;
  private active = 0;
  private readonly waiters: Waiter[] = [];
  private nextRequestAt = 0;
  private nextTokenAt = 0;
  private pausedUntil = 0;
  private share: BudgetShare = { index: 0, members: 1 };

  constructor(options: LimiterOptions = {}) {
    this.keyConcurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULT_CONCURRENCY));
    this.fixedRpm = positive(options.requestsPerMinute);
    this.fixedTpm = positive(options.tokensPerMinute);
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
  }

  /** Calls this replica may have in flight: its share of the key's concurrency (what its claim allows, when the members claim). */
  get concurrency(): number {
    return this.share.limit ?? shareOf(this.keyConcurrency, this.share);
  }

  /** Calls this replica has in flight. */
  get inFlight(): number {
    return this.active;
  }

  /** This replica's pace: its part of the key's request rate (the provider's headers give the whole key's). */
  get requestsPerMinute(): number | undefined {
    const rpm = this.fixedRpm ?? this.learnedRpm;
    return rpm && rpm / this.share.members;
  }

  get tokensPerMinute(): number | undefined {
    const tpm = this.fixedTpm ?? this.learnedTpm;
    return tpm && tpm / this.share.members;
  }

  /**
   * This replica's place among the replicas sharing the key's budget. A larger share admits waiters
   * at once; a smaller one admits no one until calls in flight have ended below it.
   */
  setShare(share: BudgetShare): void {
    this.share = { index: share.index, members: Math.max(1, share.members), ...(share.limit === undefined ? {} : { limit: Math.max(0, share.limit) }) };
    while (this.waiters.length > 0 && this.active < this.concurrency) {
      this.active++;
      this.waiters.shift()!.grant();
    }
  }

  /** Waits for a concurrency slot. Rejects with LlmAbortError if `signal` fires first. */
  acquireSlot(signal?: AbortSignal): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(new LlmAbortError(signal.reason));
    if (this.active < this.concurrency) {
      this.active++;
      return Promise.resolve(this.slot());
    }
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.slot());
        },
      };
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new LlmAbortError(signal?.reason));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private slot(): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        // Hand the slot straight to the next waiter, so `active` never dips and lets a newcomer jump
        // the queue; unless the share has shrunk below the calls in flight.
        const next = this.active <= this.concurrency ? this.waiters.shift() : undefined;
        if (next) next.grant();
        else this.active--;
      },
    };
  }

  /**
   * Waits until one request may be sent: past any pause and at its booked place in the pace.
   * Call once per HTTP attempt, while holding a slot. `estimatedTokens` feeds token pacing.
   * A send that could not happen before `deadlineAt` books nothing and rejects at once with a
   * `rate_limit` carrying when the key is free, rather than sleeping into the caller's timeout.
   */
  async pace(signal?: AbortSignal, estimatedTokens = 0, deadlineAt = Number.POSITIVE_INFINITY): Promise<void> {
    for (;;) {
      const now = this.now();
      const rpm = this.requestsPerMinute;
      const tpm = this.tokensPerMinute;
      // A generic cell rate algorithm: a send goes once the next booked instant is within
      // PACE_BURST_MS of it, and books the instant after (so a burst is at most that long).
      let sendAt = Math.max(now, this.pausedUntil);
      if (rpm) sendAt = Math.max(sendAt, this.nextRequestAt - PACE_BURST_MS);
      if (tpm && estimatedTokens > 0) sendAt = Math.max(sendAt, this.nextTokenAt - PACE_BURST_MS);
      if (sendAt > now && sendAt >= deadlineAt) throw rateLimitedFor(sendAt - now);
      if (rpm) this.nextRequestAt = Math.max(this.nextRequestAt, sendAt) + 60_000 / rpm;
      if (tpm && estimatedTokens > 0) this.nextTokenAt = Math.max(this.nextTokenAt, sendAt) + (estimatedTokens * 60_000) / tpm;
      if (sendAt <= now) return;
      try {
        await this.sleep(sendAt - now, signal);
      } catch (error) {
        throw signal?.aborted ? new LlmAbortError(signal.reason) : error;
      }
      // A 429 may have paused the key while we slept: book again after the pause.
      if (this.pausedUntil <= this.now()) return;
    }
  }

  /** Learn from any response's (or error's) rate-limit headers. */
  observe(headers: HeaderReader | undefined): void {
    if (!headers) return;
    const info = readRateLimitHeaders(headers);
    // Azure sometimes sends zeroes: a zero limit means "unknown", not "stop".
    if (info.limitRequests) this.learnedRpm = info.limitRequests;
    if (info.limitTokens) this.learnedTpm = info.limitTokens;
    const now = this.now();
    if (info.remainingRequests === 0 && info.limitRequests !== 0 && info.resetRequestsMs !== undefined) {
      // The reset is the time until the window is full again; the next single request is due after one interval.
      const rpm = this.requestsPerMinute;
      this.pauseUntil(now + (rpm ? Math.min(info.resetRequestsMs, 60_000 / rpm) : info.resetRequestsMs));
    }
    if (info.remainingTokens === 0 && info.limitTokens !== 0 && info.resetTokensMs !== undefined) {
      this.pauseUntil(now + info.resetTokensMs);
    }
  }

  /** A 429 for this key: every caller waits out the provider's `retry-after`. */
  onRateLimited(headers: HeaderReader | undefined): void {
    this.observe(headers);
    const wait = retryAfterMs(headers, this.now()) ?? readRateLimitHeaders(headers ?? emptyHeaders).resetRequestsMs ?? DEFAULT_429_PAUSE_MS;
    this.pauseUntil(this.now() + wait);
  }

  private pauseUntil(time: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, time);
    // The provider's window is spent: no burst when the pause ends, only the pace.
    this.nextRequestAt = Math.max(this.nextRequestAt, time + PACE_BURST_MS);
    this.nextTokenAt = Math.max(this.nextTokenAt, time + PACE_BURST_MS);
  }

  /** Idle limiters may be dropped from a cache; busy ones must live on. */
  get busy(): boolean {
    return this.active > 0 || this.waiters.length > 0;
  }

  /** How long every caller of the key still waits out a 429 or an exhausted window. */
  get pausedForMs(): number {
    return Math.max(0, this.pausedUntil - this.now());
  }
}

const emptyHeaders: HeaderReader = { get: () => null };

/** The key cannot send within a caller's budget: a retryable rate limit that says when it can. */
export function rateLimitedFor(waitMs: number): ServiceError {
  return new ServiceError("rate_limit", "The language-model provider's rate limit was exceeded", { retryAfterMs: Math.max(1000, waitMs) });
}

function positive(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) && value > 0 ? value : undefined;
}
