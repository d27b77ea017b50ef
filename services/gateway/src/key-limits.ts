import { randomUUID } from "node:crypto";
import { LIMITS_BUCKET, limitKeys, ServiceError } from "@litrev/contracts";
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

/**
 * Reads that go through a whole finished job: its exports, its report, its validation, a
 * validation sample's draw (the service reads every paper's score) and its download (every
 * paper's text). A finished job's event stream and a large finished job's poll are counted once
 * the job is known to be finished (`countHeavyRead`).
 */
const HEAVY = /\/jobs\/:job_id\/(export|report|validation|validation-samples|validation-samples\/:sample_id\/download)$/;
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
export type Admission = { release: () => Promise<void>; refusal?: undefined } | { refusal: ServiceError; release?: undefined };

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
function hold(record: OwnerRecord | undefined, use: KeyUse, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
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
function renew(record: OwnerRecord | undefined, holder: string, now: number, settings: KeyLimitSettings): { next: OwnerRecord; result: void } {
  const { next } = current(record, settings, holder, now);
  const mine = next.holders[holder];
  if (mine) next.holders[holder] = { ...mine, beat: now };
  return { next, result: undefined };
}

/** The gateways that joined (their ids, with when), each one's liveness in its own beat record. */
interface GatewaysRecord {
  members?: Record<string, number>;
}

/** One gateway's beat: when it last said it is alive, and how many gateways it counted then (the divisor of its share). */
interface BeatRecord {
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
function shareRefusal(settings: KeyLimitSettings, share: KeyLimitSettings, use: KeyUse): string | null {
  if (settings.ratePerS > 0 && share.ratePerS === 0) return "KEY_RATE_PER_S";
  if (use !== "stream" && settings.concurrency > 0 && share.concurrency === 0) return "KEY_CONCURRENCY";
  if (use === "heavy" && settings.heavy > 0 && share.heavy === 0) return "KEY_HEAVY_CONCURRENCY";
  if (use === "stream" && settings.streams > 0 && share.streams === 0) return "EVENT_STREAMS_PER_OWNER";
  return null;
}

/** A shared change that did not answer within the wait. */
const SLOW = Symbol("slow");

/** How long a limit check waits for the limits bucket before this gateway decides on its share alone. */
const DEFAULT_LIMITS_WAIT_MS = 500;
/**
 * Each gateway says it is alive (one small write) this often, and learns how many are: a gateway
 * that started since the last beat is counted within a second, so the shares add up to the limit
 * soon after any gateway starts. While the bucket is slow, a beat answered in time is the probe
 * that takes this gateway back to it.
 */
const BEAT_MS = 1_000;

export interface KeyLimiterOptions {
  /** The limits bucket shared by every gateway, when NATS has it; null: this gateway decides alone. */
  shared: () => RecordStore | null;
  /** How long a limit check waits for the shared record (default DEFAULT_LIMITS_WAIT_MS). */
  waitMs?: number;
  logger?: Logger;
  now?: () => number;
}

/**
 * Per-owner limits, so one client's burst cannot take the gateway (or the services behind it) from
 * the others: requests in flight, a rate with a burst, heavy reads in flight and event streams
 * open, each per owner of service keys across every gateway replica. The counts live in one
 * record per owner in the limits bucket (`SharedRecords`: compare-and-set, one round trip per
 * batch of an owner's requests); a gateway's places expire if it stops renewing them.
 *
 * The limits fail closed: when the bucket cannot be reached, or does not answer within `waitMs`
 * (an attacker's load may be what slows it), the gateway stops asking it (one probe a second until
 * it answers in time again) and decides on its own share of each limit, limit ÷ the gateways alive
 * (each says so in the bucket every few seconds), counting every place it holds, the ones taken on
 * the shared record included: never a fresh count from zero. An owner whose places were taken that
 * way goes back to the shared record once they are all given back, so the record never misses them.
 */
export class KeyLimiter {
  readonly #holder = randomUUID();
  /** Every place this gateway holds, by owner (taken on the shared record or on its share alone). */
  readonly #mine = new LocalRecords();
  /** Places this gateway holds on the shared records, by owner: renewed until given back. */
  readonly #held = new Map<string, number>();
  /** Places taken on this gateway's share alone, by owner: while any is held, the owner is decided here. */
  readonly #alone = new Map<string, number>();
  readonly #renewal: NodeJS.Timeout;
  readonly #beats: NodeJS.Timeout;
  readonly #now: () => number;
  readonly #waitMs: number;
  /** What this gateway's last beat recorded (null: none yet); its share holds only within the lease, while the others still count it. */
  #view: GatewayView | null = null;
  #beating = false;
  /** The bucket did not answer in time: decide alone until a beat does. */
  #slow = false;
  #warnedAt = -Infinity;

  constructor(
    private readonly settings: KeyLimitSettings,
    private readonly options: KeyLimiterOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#waitMs = options.waitMs ?? DEFAULT_LIMITS_WAIT_MS;
    this.#renewal = setInterval(() => this.#renew(), HOLDER_LEASE_MS / 3);
    this.#renewal.unref();
    this.#beats = setInterval(() => this.#beatNow(), BEAT_MS);
    this.#beats.unref();
    this.#beatNow();
  }

  /** Whether `use` is counted at all (every limit that applies to it off: no round trip). */
  counts(use: KeyUse): boolean {
    const s = this.settings;
    return s.ratePerS > 0 || (use === "stream" ? s.streams > 0 : s.concurrency > 0 || (use === "heavy" && s.heavy > 0));
  }

  async admit(owner: string, use: KeyUse): Promise<Admission> {
    const key = limitKeys.gateway(owner);
    const shared = this.options.shared();
    // First contact: say this gateway is alive as soon as the bucket is there, so its share is known before it is needed.
    if (shared && !this.#view && !this.#beating) void this.#beat(shared);
    if (shared && !this.#slow && !this.#alone.has(owner)) {
      const asked = await this.#ask(shared, key, use);
      if (asked !== SLOW) {
        if (asked) return { refusal: asked };
        this.#mine.changeNow(key, (record: OwnerRecord | undefined) => hold(record, use, this.#holder, this.#now(), this.#share()));
        this.#count(this.#held, owner, 1);
        return { release: this.#releaser(owner, use, shared) };
      }
    }
    return this.#admitAlone(owner, use, shared !== null);
  }

  /** The decision on this gateway's share of each limit, over every place it holds. */
  #admitAlone(owner: string, use: KeyUse, bucketSlow: boolean): Admission {
    const key = limitKeys.gateway(owner);
    const cause = bucketSlow ? `the shared limits bucket (NATS KV ${LIMITS_BUCKET}) does not answer in time` : "NATS or the shared limits bucket is unreachable";
    const view = this.#liveView();
    // Bound to the bucket but never recorded alive there (or not within the lease): the others do not count this gateway, so it has no share.
    if (bucketSlow && !view) {
      return { refusal: refusal(`This gateway does not know how many gateways share the limits (its last beat is not in the bucket), so it takes no share of them while ${cause}; retry shortly (docs/limits.md)`, BEAT_MS) };
    }
    const share = this.#share();
    const gateways = view?.gateways ?? 1;
    const why = `this gateway allows its share of each limit (limit ÷ ${gateways} gateway${gateways === 1 ? "" : "s"}, less what the others' last beats claimed) while ${cause}`;
    const zero = shareRefusal(this.settings, share, use);
    if (zero) return { refusal: refusal(`This gateway's share of ${zero} is no place at all: ${why}; retry shortly (docs/limits.md)`, BEAT_MS) };
    const refused = this.#mine.changeNow(key, (record: OwnerRecord | undefined) => take(record, use, this.#holder, this.#now(), share));
    if (refused) return { refusal: refusal(`${refused.message}; ${why}`, refused.retryAfterMs ?? BEAT_MS) };
    this.#count(this.#alone, owner, 1);
    return { release: this.#releaser(owner, use, null) };
  }

  /** Gives the place back once: to this gateway's count, and to the shared record when it was taken there. */
  #releaser(owner: string, use: KeyUse, shared: RecordStore | null): () => Promise<void> {
    const key = limitKeys.gateway(owner);
    let released: Promise<void> | undefined;
    // Resolves once the shared record has the place back (or the write failed): never rejects.
    return () => {
      if (released) return released;
      this.#mine.changeNow(key, (record: OwnerRecord | undefined) => give(record, use, this.#holder, this.#now(), this.#share()));
      if (!shared) {
        this.#count(this.#alone, owner, -1);
        return (released = Promise.resolve());
      }
      this.#count(this.#held, owner, -1);
      // A give-back that fails keeps the place counted until this gateway holds none of the owner's places (renewals stop) and its lease runs out.
      return (released = shared.change(key, (record: OwnerRecord | undefined) => give(record, use, this.#holder, this.#now(), this.settings)).then(
        () => undefined,
        () => undefined,
      ));
    };
  }

  /** The shared record's answer, or SLOW when it did not come within the wait (a place it gave after all is given back). */
  async #ask(shared: RecordStore, key: string, use: KeyUse): Promise<ServiceError | null | typeof SLOW> {
    let late = false;
    let timer: NodeJS.Timeout | undefined;
    const answer = shared.change(key, (record: OwnerRecord | undefined) => take(record, use, this.#holder, this.#now(), this.settings)).then((refused) => {
      // Decided alone meanwhile: the place the bucket gave has no request.
      if (late && !refused) shared.change(key, (record: OwnerRecord | undefined) => give(record, use, this.#holder, this.#now(), this.settings)).catch(() => undefined);
      return refused;
    });
    const waited = new Promise<typeof SLOW>((resolve) => (timer = setTimeout(resolve, this.#waitMs, SLOW)));
    try {
      const first = await Promise.race([answer, waited]);
      if (first !== SLOW) return first;
      late = true;
      answer.catch(() => undefined);
      this.#slowDown(new Error(`no answer within ${this.#waitMs} ms`));
      return SLOW;
    } catch (error) {
      this.#slowDown(error);
      return SLOW;
    } finally {
      clearTimeout(timer);
    }
  }

  /** From now on decide alone, until a beat is answered in time again. */
  #slowDown(error: unknown): void {
    this.#slow = true;
    // Once a minute at most: every counted request would say it while NATS is in trouble.
    if (this.#now() - this.#warnedAt > 60_000) {
      this.#warnedAt = this.#now();
      this.options.logger?.warn({ err: error, gateways: this.#liveView()?.gateways ?? null }, "the shared limits did not answer in time; this gateway allows its share of each limit meanwhile");
    }
  }

  /**
   * One beat; one answered in time takes a slow gateway back to the bucket, and one that is not
   * makes it slow at once, so that the next counted request does not wait for the bucket first.
   */
  #beatNow(): void {
    const shared = this.options.shared();
    // One beat at a time: a slow bucket is not asked more often than it answers.
    if (!shared || this.#beating) return;
    void this.#beat(shared).then((answered) => {
      if (!answered) return this.#slowDown(new Error(`a beat had no answer within ${this.#waitMs} ms`));
      if (!this.#slow) return;
      this.#slow = false;
      this.options.logger?.info("the shared limits answer in time again");
    });
  }

  /** Says this gateway is alive and learns how many are; true when the bucket answered within the wait. */
  async #beat(shared: RecordStore): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    this.#beating = true;
    const answer = this.#beatOnce(shared)
      .then((view) => {
        // Late or not, it is what the bucket now holds of this gateway: the others count its share by it.
        if (!this.#view || view.at >= this.#view.at) this.#view = view;
        return true;
      })
      .finally(() => (this.#beating = false));
    const waited = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, this.#waitMs, false)));
    try {
      return await Promise.race([answer, waited]);
    } catch {
      return false;
    } finally {
      answer.catch(() => undefined);
      clearTimeout(timer);
    }
  }

  /**
   * One beat: reads the members (joining them when not there: the one write to a record the
   * gateways share, so beats never contend), reads each one's beat, and writes this gateway's own
   * with the count it decides by. Its share then holds for the lease from that beat.
   */
  async #beatOnce(shared: RecordStore): Promise<GatewayView> {
    const holder = this.#holder;
    let members = (await shared.read<GatewaysRecord>(limitKeys.gateways))?.members ?? {};
    if (!(holder in members)) {
      members = await shared.change(limitKeys.gateways, (record: GatewaysRecord | undefined) => {
        const next = { members: { ...record?.members, [holder]: this.#now() } };
        return { next, result: next.members };
      });
    }
    const ids = Object.keys(members).filter((id) => id !== holder);
    const read = await Promise.all(ids.map((id) => shared.read<BeatRecord>(limitKeys.gatewayBeat(id))));
    const beats = Object.fromEntries(ids.map((id, i) => [id, read[i]]));
    const at = this.#now();
    const { view, gone } = viewOf(members, beats, holder, at);
    if (gone.length > 0) {
      // Members silent for CLAIM_MS are dropped (one that was only slow joins again at its next beat).
      void shared
        .change(limitKeys.gateways, (record: GatewaysRecord | undefined) => {
          const next = { members: { ...record?.members } };
          for (const id of gone) delete next.members[id];
          return { next, result: undefined };
        })
        .catch(() => undefined);
    }
    await shared.change(limitKeys.gatewayBeat(holder), () => ({ next: { at, seen: view.gateways } satisfies BeatRecord, result: undefined }));
    return { at, ...view };
  }

  /** The last beat, while the other gateways still count it (within the lease). */
  #liveView(): GatewayView | null {
    const view = this.#view;
    return view && this.#now() - view.at < HOLDER_LEASE_MS ? view : null;
  }

  /** This gateway's share of each limit (its own record's tokens refill and cap by it, whoever decides); with no live beat, as if alone (NATS unreachable: nothing reaches a service). */
  #share(): KeyLimitSettings {
    return gatewayShare(this.settings, this.#liveView() ?? { gateways: 1, others: [] });
  }

  #count(counts: Map<string, number>, owner: string, by: number): void {
    const left = (counts.get(owner) ?? 0) + by;
    if (left > 0) counts.set(owner, left);
    else counts.delete(owner);
  }

  close(): void {
    clearInterval(this.#renewal);
    clearInterval(this.#beats);
  }

  #renew(): void {
    const shared = this.options.shared();
    if (!shared) return;
    for (const owner of this.#held.keys()) {
      shared.change(limitKeys.gateway(owner), (record: OwnerRecord | undefined) => renew(record, this.#holder, this.#now(), this.settings)).catch(() => undefined);
    }
  }
}
