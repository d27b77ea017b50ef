import { randomUUID } from "node:crypto";
import { limitKeys, ServiceError } from "@litrev/contracts";
import { LocalRecords, type RecordStore } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";

export interface KeyLimitSettings {
  /** Requests of one owner in flight at once (heavy reads included); 0: no limit. */
  concurrency: number;
  /** Sustained requests per second of one owner; 0: no limit. */
  ratePerS: number;
  /** Requests one owner may send at once above the sustained rate. */
  burst: number;
  /** Heavy reads (exports, reports, validations, polls of large finished jobs) of one owner in flight at once; 0: no limit. */
  heavy: number;
  /** Job event streams one owner holds open at once; 0: no limit. */
  streams: number;
}

/**
 * What a counted request uses: `request` a place among the owner's requests in flight; `heavy`
 * one of those and a place among its heavy reads; `stream` a place among its event streams (a
 * stream may stay open for hours, so it does not hold a request place). Each also takes a token.
 */
export type KeyUse = "request" | "heavy" | "stream";

/** Reads that hold a whole finished job's worth of work: its exports, its report, its validation. */
const HEAVY = /\/jobs\/:job_id\/(export|report|validation)$/;
const STREAM = /\/jobs\/:job_id\/events$/;

/**
 * What a request counts against its owner's limits (null: nothing). Polls, listings and active-job
 * reads are light (answered from memory or one small read) and not counted: they are the hot path.
 */
export function keyUse(method: string, route: string | undefined): KeyUse | null {
  if (route && HEAVY.test(route)) return "heavy";
  if (route && STREAM.test(route)) return "stream";
  return method === "GET" || method === "HEAD" ? null : "request";
}

/** One gateway's places of one owner, with when it last said it is alive. */
interface Holding {
  requests: number;
  heavy: number;
  streams: number;
  beat: number;
}

/** An owner's allowance as every gateway sees it: the token bucket and each gateway's places. */
export interface OwnerRecord {
  /** Token bucket: requests allowed now, refilled at `ratePerS` up to `burst` (wall clock, shared by the gateways). */
  tokens: number;
  at: number;
  holders: Record<string, Holding>;
}

/** Either a place for the request (release it once, when the request ends) or the 429 to answer. */
export type Admission = { release: () => void; refusal?: undefined } | { refusal: ServiceError; release?: undefined };

/**
 * A gateway that stops saying it is alive (crashed, cut off) for this long loses its places, so
 * they cannot stay taken for ever; a live gateway renews them every third of it.
 */
export const HOLDER_LEASE_MS = 15_000;

const refusal = (message: string, retryAfterMs: number) => new ServiceError("rate_limit", message, { retryAfterMs });
const places = (h: Holding | undefined): Holding => ({ requests: h?.requests ?? 0, heavy: h?.heavy ?? 0, streams: h?.streams ?? 0, beat: h?.beat ?? 0 });

/** The record with every expired or empty holding but `holder`'s dropped, and the sums of the live ones. */
function current(record: OwnerRecord | undefined, settings: KeyLimitSettings, holder: string, now: number) {
  const holders: Record<string, Holding> = {};
  const sum = { requests: 0, heavy: 0, streams: 0 };
  for (const [id, h] of Object.entries(record?.holders ?? {})) {
    const empty = h.requests + h.heavy + h.streams <= 0;
    if (id !== holder && (empty || now - h.beat > HOLDER_LEASE_MS)) continue;
    holders[id] = h;
    sum.requests += h.requests;
    sum.heavy += h.heavy;
    sum.streams += h.streams;
  }
  // A clock behind the last writer's refills nothing until it catches up.
  const tokens = Math.min(settings.burst, (record?.tokens ?? settings.burst) + (Math.max(0, now - (record?.at ?? now)) / 1_000) * settings.ratePerS);
  return { next: { tokens, at: Math.max(now, record?.at ?? now), holders }, sum };
}

/** Takes a place of `use` for `holder` and a token, or says why not (pure: it may run again on a fresh record). */
export function take(record: OwnerRecord | undefined, use: KeyUse, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: ServiceError | null } {
  const { next, sum } = current(record, settings, holder, now);
  const refuse = (error: ServiceError) => ({ next, result: error });
  if (use !== "stream" && settings.concurrency > 0 && sum.requests >= settings.concurrency) {
    // When one of them ends is unknown; a second is the shortest wait the header can say.
    return refuse(refusal(`More than ${settings.concurrency} requests of this client in flight (KEY_CONCURRENCY, docs/limits.md); retry when one has ended`, 1_000));
  }
  if (use === "heavy" && settings.heavy > 0 && sum.heavy >= settings.heavy) {
    return refuse(refusal(`More than ${settings.heavy} exports, reports, validations and polls of large finished jobs of this client at once (KEY_HEAVY_CONCURRENCY, docs/limits.md); retry when one has ended`, 1_000));
  }
  if (use === "stream" && settings.streams > 0 && sum.streams >= settings.streams) {
    return refuse(refusal(`This client already has ${settings.streams} job event streams open (EVENT_STREAMS_PER_OWNER, docs/limits.md); close one or poll the job`, 5_000));
  }
  if (settings.ratePerS > 0) {
    if (next.tokens < 1) {
      const waitMs = ((1 - next.tokens) / settings.ratePerS) * 1_000;
      return refuse(refusal(`More than ${settings.ratePerS} requests per second from this client (KEY_RATE_PER_S, burst KEY_RATE_BURST, docs/limits.md)`, waitMs));
    }
    next.tokens -= 1;
  }
  const mine = places(next.holders[holder]);
  if (use === "stream") mine.streams++;
  else mine.requests++;
  if (use === "heavy") mine.heavy++;
  next.holders[holder] = { ...mine, beat: now };
  return { next, result: null };
}

/** Gives `holder`'s place of `use` back (never below zero: places of a gateway that had lost its lease are gone already). */
export function give(record: OwnerRecord | undefined, use: KeyUse, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
  const { next } = current(record, settings, holder, now);
  const mine = places(next.holders[holder]);
  if (use === "stream") mine.streams = Math.max(0, mine.streams - 1);
  else mine.requests = Math.max(0, mine.requests - 1);
  if (use === "heavy") mine.heavy = Math.max(0, mine.heavy - 1);
  if (mine.requests + mine.heavy + mine.streams === 0) delete next.holders[holder];
  else next.holders[holder] = { ...mine, beat: now };
  return { next, result: undefined };
}

/** Renews `holder`'s lease on its places. */
function renew(record: OwnerRecord | undefined, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
  const { next } = current(record, settings, holder, now);
  const mine = next.holders[holder];
  if (mine) next.holders[holder] = { ...mine, beat: now };
  return { next, result: undefined };
}

export interface KeyLimiterOptions {
  /** The limits bucket shared by every gateway, when NATS has it; null: this gateway decides alone. */
  shared: () => RecordStore | null;
  logger?: Logger;
  now?: () => number;
}

/**
 * Per-owner limits, so one client's burst cannot take the gateway (or the services behind it) from
 * the others: requests in flight, a rate with a burst, heavy reads in flight and event streams
 * open, each per owner of service keys across every gateway replica. The counts live in one
 * record per owner in the limits bucket (`SharedRecords`: compare-and-set, one round trip per
 * batch of an owner's requests); a gateway's places expire if it stops renewing them. While NATS
 * is unreachable a gateway counts in its own memory (the same rules, per replica).
 */
export class KeyLimiter {
  readonly #holder = randomUUID();
  readonly #local = new LocalRecords();
  /** Places this gateway holds on the shared records, by owner: renewed until given back. */
  readonly #held = new Map<string, number>();
  readonly #renewal: NodeJS.Timeout;
  readonly #now: () => number;
  #warnedAt = -Infinity;

  constructor(
    private readonly settings: KeyLimitSettings,
    private readonly options: KeyLimiterOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#renewal = setInterval(() => this.#renew(), HOLDER_LEASE_MS / 3);
    this.#renewal.unref();
  }

  /** Whether `use` is counted at all (every limit that applies to it off: no round trip). */
  counts(use: KeyUse): boolean {
    const s = this.settings;
    return s.ratePerS > 0 || (use === "stream" ? s.streams > 0 : s.concurrency > 0 || (use === "heavy" && s.heavy > 0));
  }

  async admit(owner: string, use: KeyUse): Promise<Admission> {
    const key = limitKeys.gateway(owner);
    const change = (record: OwnerRecord | undefined) => take(record, use, this.#holder, this.#now(), this.settings);
    let store: RecordStore = this.#local;
    let refused: ServiceError | null;
    const shared = this.options.shared();
    if (shared) {
      try {
        refused = await shared.change(key, change);
        store = shared;
      } catch (error) {
        // Once a minute at most: every counted request would say it while NATS is in trouble.
        if (this.#now() - this.#warnedAt > 60_000) {
          this.#warnedAt = this.#now();
          this.options.logger?.warn({ err: error }, "the shared limits could not be read; this gateway counts alone meanwhile");
        }
        refused = this.#local.changeNow(key, change);
      }
    } else refused = this.#local.changeNow(key, change);
    if (refused) return { refusal: refused };
    if (store !== this.#local) this.#held.set(owner, (this.#held.get(owner) ?? 0) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        if (store !== this.#local) {
          const left = (this.#held.get(owner) ?? 1) - 1;
          if (left > 0) this.#held.set(owner, left);
          else this.#held.delete(owner);
        }
        // A give-back that fails keeps the place counted until this gateway holds none of the owner's places (renewals stop) and its lease runs out.
        store.change(key, (record: OwnerRecord | undefined) => give(record, use, this.#holder, this.#now(), this.settings)).catch(() => undefined);
      },
    };
  }

  close(): void {
    clearInterval(this.#renewal);
  }

  #renew(): void {
    const shared = this.options.shared();
    if (!shared) return;
    for (const owner of this.#held.keys()) {
      shared.change(limitKeys.gateway(owner), (record: OwnerRecord | undefined) => renew(record, this.#holder, this.#now(), this.settings)).catch(() => undefined);
    }
  }
}
