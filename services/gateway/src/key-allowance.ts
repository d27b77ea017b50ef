import { ServiceError } from "@litrev/contracts";

// The pure arithmetic of per-owner limits (no I/O, so a compare-and-set may run it again on a fresh
// record): an owner's record of places and tokens, and each gateway's share of a limit. `KeyLimiter` (key-limits.ts) applies it.

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

/**
 * A gateway that stops saying it is alive (crashed, cut off) for this long loses its places, so
 * they cannot stay taken for ever; a live gateway renews them every third of it.
 */
export const HOLDER_LEASE_MS = 15_000;

export const refusal = (message: string, retryAfterMs: number) => new ServiceError("rate_limit", message, { retryAfterMs });
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
    return refuse(refusal(`More than ${settings.heavy} exports, reports, validations and polls of large finished jobs (validation-sample draws and downloads and finished jobs' event streams included) of this client at once (KEY_HEAVY_CONCURRENCY, docs/limits.md); retry when one has ended`, 1_000));
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
  return { next: withPlace(next, use, holder, now), result: null };
}

/** Adds `holder`'s place of `use` to the record (the limits were checked already). */
function withPlace(next: OwnerRecord, use: KeyUse, holder: string, now: number): OwnerRecord {
  const mine = places(next.holders[holder]);
  if (use === "stream") mine.streams++;
  else mine.requests++;
  if (use === "heavy") mine.heavy++;
  next.holders[holder] = { ...mine, beat: now };
  return next;
}

/** Counts a place the shared record granted in this gateway's own record, checking nothing and taking no token (its tokens refill by `settings`). */
export function hold(record: OwnerRecord | undefined, use: KeyUse, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
  return { next: withPlace(current(record, settings, holder, now).next, use, holder, now), result: undefined };
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
export function renew(record: OwnerRecord | undefined, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
  const { next } = current(record, settings, holder, now);
  const mine = next.holders[holder];
  if (mine) next.holders[holder] = { ...mine, beat: now };
  return { next, result: undefined };
}

/** The gateways that joined (their ids, with when), each one's liveness in its own beat record. */
export interface GatewaysRecord {
  members?: Record<string, number>;
}

/** One gateway's beat: when it last said it is alive, and how many gateways it counted then (the divisor of its share). */
export interface BeatRecord {
  at: number;
  seen: number;
}

/** What one beat told a gateway: when, how many gateways are alive, and how many each of the others counted at its own last beat. */
export interface GatewayView {
  at: number;
  gateways: number;
  others: number[];
}

/**
 * A gateway's share is counted by the others for twice the lease after its last beat (a beat read
 * a moment before a newer one landed must not let them drop it while it still decides on it); a
 * member silent for longer is dropped from the record of members.
 */
const CLAIM_MS = 2 * HOLDER_LEASE_MS;

/**
 * What a gateway learns from the members and their beats: the live ones (a beat within the
 * lease) divide each limit; the claims of every one that beat within CLAIM_MS (or joined within
 * it without a beat yet: counted as alone, the largest claim) are what its share may not exceed.
 */
export function viewOf(members: Record<string, number>, beats: Record<string, BeatRecord | undefined>, holder: string, now: number): { view: Omit<GatewayView, "at">; gone: string[] } {
  let live = 1;
  const others: number[] = [];
  const gone: string[] = [];
  for (const [id, joined] of Object.entries(members)) {
    if (id === holder) continue;
    const beat = beats[id];
    const since = now - (beat?.at ?? joined);
    if (since > CLAIM_MS) {
      gone.push(id);
      continue;
    }
    if (beat && since <= HOLDER_LEASE_MS) live++;
    others.push(Math.max(1, beat?.seen ?? 1));
  }
  return { view: { gateways: live, others }, gone };
}

/**
 * One gateway's share of each limit: limit ÷ the gateways alive, rounded down, and never more than
 * what the others' shares leave (each other one takes at most limit ÷ the count it saw at its own
 * last beat, which may be older than this one: a gateway that started after it saw it alone,
 * so the newcomer's share is what is left). Whichever gateway beat last counted every other's
 * current share, so the shares of the live gateways never add up to more than the limit.
 * 0 stays off; a share under one place refuses (`shareRefusal`).
 */
export function gatewayShare(settings: KeyLimitSettings, view: Pick<GatewayView, "gateways" | "others">): KeyLimitSettings {
  const part = (limit: number, round: (x: number) => number) => {
    if (limit === 0) return 0;
    const taken = view.others.reduce((sum, n) => sum + round(limit / n), 0);
    return Math.max(0, Math.min(round(limit / view.gateways), limit - taken));
  };
  const ratePerS = part(settings.ratePerS, (x) => x);
  return {
    concurrency: part(settings.concurrency, Math.floor),
    ratePerS,
    burst: ratePerS > 0 ? Math.max(1, part(settings.burst, Math.floor)) : 0,
    heavy: part(settings.heavy, Math.floor),
    streams: part(settings.streams, Math.floor),
  };
}

/** The limits a share of zero places stands for: `take` reads 0 as off, so such a share refuses outright. */
export function shareRefusal(settings: KeyLimitSettings, share: KeyLimitSettings, use: KeyUse): string | null {
  if (settings.ratePerS > 0 && share.ratePerS === 0) return "KEY_RATE_PER_S";
  if (use !== "stream" && settings.concurrency > 0 && share.concurrency === 0) return "KEY_CONCURRENCY";
  if (use === "heavy" && settings.heavy > 0 && share.heavy === 0) return "KEY_HEAVY_CONCURRENCY";
  if (use === "stream" && settings.streams > 0 && share.streams === 0) return "EVENT_STREAMS_PER_OWNER";
  return null;
}
