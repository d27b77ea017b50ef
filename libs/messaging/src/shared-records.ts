import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { LIMITS_BUCKET } from "@litrev/contracts";
import { keepStreamLimits, storageQuotas } from "./quotas";
import { streamReplicas } from "./replicas";

/** One change of a record: the record after it, and what the caller learns (both from the record before it). */
export type RecordChange<T, R> = (current: T | undefined) => { next: T; result: R };

/** Small JSON records changed atomically, one key at a time: per-owner counters that every replica sees. */
export interface RecordStore {
  change<T, R>(key: string, apply: RecordChange<T, R>): Promise<R>;
  /** The record as stored now (a fresh read, never a copy kept from before). */
  read<T>(key: string): Promise<T | undefined>;
}

/** A record no bigger than this (a few hundred holders or jobs); a larger one is refused, never stored. */
const MAX_RECORD_BYTES = 64 * 1024;
/** Changes of one key waiting for its next write; more are refused at once (the caller decides alone), so a storm cannot queue without bound. */
const MAX_QUEUED = 1_024;
/** Compare-and-set attempts of one batch before its callers get the error. */
const MAX_ATTEMPTS = 8;
/** A limit check waits at most this long for NATS; then the caller decides alone (see `OwnerAllowances`). */
const KV_TIMEOUT_MS = 2_000;

interface Pending {
  apply: RecordChange<unknown, unknown>;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Records in the limits bucket (`KV_litrev_limits`), changed only by compare-and-set, so that
 * counters kept by several processes stay exact. The changes one process makes to one key while a
 * write of it is under way are combined into the next single write: a burst of one owner's
 * requests costs one round trip per batch, not one per request, and never contends with itself.
 * The last value written or read is kept, so a key only this process changes costs one write and
 * no read; a write another process got in first is retried on a fresh read (`change` functions are
 * pure: they may run more than once).
 */
export class SharedRecords implements RecordStore {
  readonly #known = new Map<string, { value: unknown; revision: number }>();
  readonly #queues = new Map<string, Pending[]>();

  private constructor(private readonly kv: KV) {}

  /**
   * Opens the bucket; services create it (within `NATS_QUOTA_LIMITS_MB`), a gateway binds to it with
   * `create: false` (its NATS user may not create streams). `timeoutMs` bounds each request to the
   * bucket (default KV_TIMEOUT_MS): a caller that bounds its own wait may let a late answer land.
   */
  static async open(nc: NatsConnection, options: { create?: boolean; timeoutMs?: number } = {}): Promise<SharedRecords> {
    const kvm = new Kvm(jetstream(nc, { timeout: options.timeoutMs ?? KV_TIMEOUT_MS }));
    if (options.create === false) {
      const kv = await kvm.open(LIMITS_BUCKET);
      await kv.status(); // `open` only binds: fail here while the bucket does not exist
      return new SharedRecords(kv);
    }
    const maxBytes = storageQuotas().limitsBytes;
    const kv = await kvm.create(LIMITS_BUCKET, { history: 1, replicas: streamReplicas(), max_bytes: maxBytes, maxValueSize: MAX_RECORD_BYTES });
    await keepStreamLimits(await jetstreamManager(nc), `KV_${LIMITS_BUCKET}`, { max_bytes: maxBytes });
    return new SharedRecords(kv);
  }

  change<T, R>(key: string, apply: RecordChange<T, R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.#queues.get(key);
      const pending: Pending = { apply: apply as RecordChange<unknown, unknown>, resolve: resolve as (r: unknown) => void, reject };
      if (queue && queue.length >= MAX_QUEUED) return reject(new Error(`${MAX_QUEUED} changes of limits record ${key} are waiting already`));
      if (queue) return void queue.push(pending);
      this.#queues.set(key, [pending]);
      void this.#drain(key);
    });
  }

  /** Writes the key's queued changes, batch after batch, until none is left. */
  async #drain(key: string): Promise<void> {
    const queue = this.#queues.get(key)!;
    while (queue.length > 0) {
      const batch = queue.splice(0);
      try {
        const results = await this.#write(key, batch);
        batch.forEach((p, i) => p.resolve(results[i]));
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
    this.#queues.delete(key);
  }

  async #write(key: string, batch: Pending[]): Promise<unknown[]> {
    for (let attempt = 1; ; attempt++) {
      const base = this.#known.get(key) ?? (await this.#read(key));
      let value = base.value === undefined ? undefined : structuredClone(base.value);
      const results = batch.map((p) => {
        const changed = p.apply(value);
        value = changed.next;
        return changed.result;
      });
      const bytes = JSON.stringify(value);
      if (bytes.length > MAX_RECORD_BYTES) throw new Error(`limits record ${key} would exceed ${MAX_RECORD_BYTES} bytes`);
      try {
        const revision = base.revision === 0 ? await this.kv.create(key, bytes) : await this.kv.update(key, bytes, base.revision);
        this.#known.set(key, { value, revision });
        return results;
      } catch (error) {
        // Another process wrote first (or the key changed under us): read it again and re-apply.
        this.#known.delete(key);
        if (attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  async read<T>(key: string): Promise<T | undefined> {
    return (await this.#read(key)).value as T | undefined;
  }

  async #read(key: string): Promise<{ value: unknown; revision: number }> {
    const entry = await this.kv.get(key);
    // A deleted or purged key is written again with `update` on its delete marker's revision.
    if (!entry) return { value: undefined, revision: 0 };
    if (entry.operation !== "PUT") return { value: undefined, revision: entry.revision };
    const read = { value: entry.json<unknown>(), revision: entry.revision };
    this.#known.set(key, read);
    return read;
  }
}

/** The same records in this process only: the fallback while NATS is unreachable, and for tests. */
export class LocalRecords implements RecordStore {
  readonly #records = new Map<string, unknown>();

  change<T, R>(key: string, apply: RecordChange<T, R>): Promise<R> {
    return Promise.resolve(this.changeNow(key, apply));
  }

  read<T>(key: string): Promise<T | undefined> {
    return Promise.resolve(this.#records.get(key) as T | undefined);
  }

  /** The change applied at once (no I/O). */
  changeNow<T, R>(key: string, apply: RecordChange<T, R>): R {
    const { next, result } = apply(this.#records.get(key) as T | undefined);
    this.#records.set(key, next);
    return result;
  }
}
