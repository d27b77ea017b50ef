import { randomUUID } from "node:crypto";
import { LIMITS_BUCKET, limitKeys, type ServiceError } from "@litrev/contracts";
import { LocalRecords, type RecordStore } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import { gatewayShare, give, hold, HOLDER_LEASE_MS, refusal, renew, shareRefusal, take, viewOf, type BeatRecord, type GatewaysRecord, type GatewayView, type KeyLimitSettings, type KeyUse, type OwnerRecord } from "./key-allowance";

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

/** Either a place for the request (release it once, when the request ends) or the 429 to answer. */
export type Admission = { release: () => Promise<void>; refusal?: undefined } | { refusal: ServiceError; release?: undefined };

/** A shared change that did not answer within the wait. */
const SLOW = Symbol("slow");

/** How long a limit check waits for the limits bucket at most before this gateway decides on its share alone. */
const DEFAULT_LIMITS_WAIT_MS = 500;
/**
 * Within that, a limit check waits this many times the bucket's usual round trip (smoothed over its
 * answers, late ones too), and no less than MIN_WAIT_MS: when the bucket slows at once (an attack's
 * load), the request that finds it out waits about a tenth of a second, not the whole wait.
 */
const WAIT_PER_ROUND_TRIP = 8;
const MIN_WAIT_MS = 100;
/** Answers seen before the wait adapts (until then: the whole wait, so a gateway's start is never refused for a slow first beat). */
const ROUND_TRIPS_BEFORE_ADAPTING = 5;
const SMOOTHING = 0.2;
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
  /** How long a limit check waits for the shared record at most (default DEFAULT_LIMITS_WAIT_MS). */
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
  /** The bucket's round trip, smoothed, and how many answers it is made of. */
  #roundTripMs = 0;
  #roundTrips = 0;

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
    const answer = this.#timed(shared.change(key, (record: OwnerRecord | undefined) => take(record, use, this.#holder, this.#now(), this.settings))).then((refused) => {
      // Decided alone meanwhile: the place the bucket gave has no request.
      if (late && !refused) shared.change(key, (record: OwnerRecord | undefined) => give(record, use, this.#holder, this.#now(), this.settings)).catch(() => undefined);
      return refused;
    });
    const waitMs = this.#requestWaitMs();
    const waited = new Promise<typeof SLOW>((resolve) => (timer = setTimeout(resolve, waitMs, SLOW)));
    try {
      const first = await Promise.race([answer, waited]);
      if (first !== SLOW) return first;
      late = true;
      answer.catch(() => undefined);
      this.#slowDown(new Error(`no answer within ${waitMs} ms`));
      return SLOW;
    } catch (error) {
      this.#slowDown(error);
      return SLOW;
    } finally {
      clearTimeout(timer);
    }
  }

  /** How long a counted request waits for the bucket: a few of its usual round trips, within the configured wait. */
  #requestWaitMs(): number {
    if (this.#roundTrips < ROUND_TRIPS_BEFORE_ADAPTING) return this.#waitMs;
    return Math.min(this.#waitMs, Math.max(MIN_WAIT_MS, WAIT_PER_ROUND_TRIP * this.#roundTripMs));
  }

  /** Times one request to the bucket into the smoothed round trip, whether it answers, fails or times out. */
  #timed<T>(request: Promise<T>): Promise<T> {
    const started = this.#now();
    const done = () => {
      const ms = Math.max(0, this.#now() - started);
      this.#roundTripMs = this.#roundTrips === 0 ? ms : this.#roundTripMs + SMOOTHING * (ms - this.#roundTripMs);
      this.#roundTrips++;
    };
    request.then(done, done);
    return request;
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
    let members = (await this.#timed(shared.read<GatewaysRecord>(limitKeys.gateways)))?.members ?? {};
    if (!(holder in members)) {
      members = await this.#timed(
        shared.change(limitKeys.gateways, (record: GatewaysRecord | undefined) => {
          const next = { members: { ...record?.members, [holder]: this.#now() } };
          return { next, result: next.members };
        }),
      );
    }
    const ids = Object.keys(members).filter((id) => id !== holder);
    const read = await Promise.all(ids.map((id) => this.#timed(shared.read<BeatRecord>(limitKeys.gatewayBeat(id)))));
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
    await this.#timed(shared.change(limitKeys.gatewayBeat(holder), () => ({ next: { at, seen: view.gateways } satisfies BeatRecord, result: undefined })));
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
