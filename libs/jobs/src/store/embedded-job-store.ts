import { setTimeout as sleep } from "node:timers/promises";
import { jetstream, jetstreamManager, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import pLimit from "p-limit";
import { jobNames, type JobNames, type JobService } from "@litrev/contracts";
import { keepStreamLimits, storageQuotas, streamReplicas } from "@litrev/messaging";
import { JobData } from "../data";
import { CreationIndex, ensureIndexStream, parseIndexEntry } from "./creation-index";
import { eraseKeysNaming, eraseObjectsNaming } from "../erase";
import { finiteOrNull } from "../finite";
import { ownedBy } from "../state";
import { isStreamOrMessageNotFound, isWrongLastSequence, shortReason, withDeadline } from "./jetstream-codes";
import { accepts, checkFence, isActiveStatus, type JobStore, type StoredJob, type UpsertOutcome } from "./job-store";

export const DEFAULT_STORE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface EmbeddedJobStoreOptions {
  /** How long a job's row and index entry are kept after their last write (default 30 days). */
  retentionMs?: number;
  /** Upper bound on one row read/write or listing; beyond it the call throws (callers retry). */
  timeoutMs?: number;
  /** Upper bound on writing or reading a split row's whole, or on a deletion. */
  transferTimeoutMs?: number;
  /** Copies JetStream keeps (default: `streamReplicas()`, i.e. NATS_REPLICAS). */
  replicas?: number;
}

/**
 * A row larger than this would not fit one NATS message with room to spare (default max payload
 * 1 MB): it is split, the whole row written to the items store first and its key holding the row
 * without its result and extras (`SPLIT`), which a read replaces by the whole.
 */
const MAX_ROW_BYTES = 900 * 1024;
/** Marks a row whose whole is in the items store (`storeRowObject` of its fence). */
const SPLIT = "row_split";
/** Compare-and-set attempts per write before giving up (contention is a handful of writers per job). */
const MAX_CAS_ATTEMPTS = 64;
/** Requests in flight at once for one listing or project look-up. */
const READ_CONCURRENCY = 32;
/** Most active-index keys read for one project (a project has a few active jobs at most). */
const MAX_ACTIVE_KEYS = 1_000;
/** A listing reads this many index entries beyond `limit`, so that sorting the page by created_at has margin. */
const LISTING_SLACK = 16;
/**
 * A listing for one client skips at most this many newer jobs of other clients (index entries
 * carry the owner, so a skip costs one direct get and no row read); older jobs of the client
 * beyond them are not listed.
 */
const MAX_FOREIGN_SCAN = 10_000;
/** Gaps (entries deleted with their jobs) a listing reads past at most; older jobs beyond them are not listed. */
const MAX_DELETED_SCAN = 10_000;
/** Index entries read per round while skipping other clients' jobs or deleted jobs' gaps. */
const FILTERED_BATCH = 256;
/** Job ids become key and subject tokens. */
const JOB_ID = /^[A-Za-z0-9_-]{1,128}$/;

const encoder = new TextEncoder();

/**
 * The default store of record, embedded in the NATS deployment the system already runs (file
 * storage, replicated with NATS_REPLICAS), used whenever MONGO_URL is unset.
 *
 * - Rows: KV bucket `litrev_store_<svc>`, key `job.<id>` → the StoredJob as JSON. Every write is a
 *   compare-and-set on the key's revision, so the fencing rule is checked and applied atomically.
 * - Active index: key `active.<project>.<job>` exists while the row is pending/running; it is put
 *   *before* the row turns active (a crash leaves at most a stale key, which readers filter out) and
 *   deleted after the row turns terminal, conditional on the revision read before the row write, so
 *   a concurrent re-activation is never undone.
 * - Creation index (`creation-index.ts`): stream `LITREV_STORE_INDEX_<SVC>`, one message per job appended before its first
 *   row write (Nats-Msg-Id = job id, so a racing first write is de-duplicated). A listing reads the
 *   newest ~limit entries backwards by sequence from the stream's last sequence with direct gets:
 *   O(limit), whatever the job count, plus one get per deleted job's entry it passes (a gap).
 * - Object store `litrev_store_items_<svc>`: the whole of a row too large for its key (`SPLIT`).
 *   A job's items are not here: they live only in its finished artifact (`artifact.ts`). Items an
 *   older version stored here (`<job>/<fence>/<n>`) are never read, only erased with their job.
 *
 * Everything expires `retentionMs` (default 30 days) after its last write. Every call is bounded
 * in time: during a NATS outage calls throw (`StoreTimeoutError` or the client's own error) rather
 * than hang, and `status()` reports the failure until a call succeeds again.
 */
export class EmbeddedJobStore implements JobStore {
  readonly kind = "jetstream";
  readonly persistent = true;
  #lastError: string | undefined;

  private constructor(
    private readonly names: JobNames,
    private readonly index: CreationIndex,
    private readonly jsm: JetStreamManager,
    private readonly kv: KV,
    private readonly objects: ObjectStore,
    /** Reads of split rows' wholes from `objects`. */
    private readonly wholes: JobData,
    private readonly replicas: number,
    private readonly timeoutMs: number,
    private readonly transferTimeoutMs: number,
  ) {}

  /** Creates (idempotently, safe from every replica at once) and opens the service's store. */
  static async open(nc: NatsConnection, service: JobService, options: EmbeddedJobStoreOptions = {}): Promise<EmbeddedJobStore> {
    const names = jobNames(service);
    const retentionMs = options.retentionMs ?? DEFAULT_STORE_RETENTION_MS;
    const replicas = options.replicas ?? streamReplicas();
    const timeoutMs = options.timeoutMs ?? 10_000;
    const js = jetstream(nc, { timeout: Math.min(timeoutMs, 5_000) });
    const jsm = await jetstreamManager(nc, { timeout: Math.min(timeoutMs, 5_000) });
    const quotas = storageQuotas();
    const kv = await new Kvm(js).create(names.storeBucket, {
      history: 1,
      // Rows are read from the stream leader: on a cluster a replica may lag behind a row's last write.
      allow_direct: false,
      ttl: retentionMs,
      storage: StorageType.File,
      replicas,
      maxValueSize: MAX_ROW_BYTES,
      max_bytes: quotas.storeRowsBytes,
    });
    await keepStreamLimits(jsm, `KV_${names.storeBucket}`, { max_age: nanos(retentionMs), max_bytes: quotas.storeRowsBytes });
    const objects = await new Objm(js).create(names.storeItemsBucket, { ttl: nanos(retentionMs), storage: StorageType.File, replicas, max_bytes: quotas.storeItemsBytes });
    await keepStreamLimits(jsm, `OBJ_${names.storeItemsBucket}`, { max_age: nanos(retentionMs), max_bytes: quotas.storeItemsBytes });
    await ensureIndexStream(jsm, names, retentionMs, replicas, quotas.storeIndexBytes);
    return new EmbeddedJobStore(names, new CreationIndex(js, jsm, names), jsm, kv, objects, new JobData(objects), replicas, timeoutMs, options.transferTimeoutMs ?? 60_000);
  }

  status(): string {
    return this.#lastError ? `error: job store unavailable (${this.#lastError})` : "ok";
  }

  describe(): string {
    return `jetstream (embedded, R${this.replicas})`;
  }

  async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    checkFence(job.fence);
    checkJobId(job.job_id);
    const row = finiteOrNull(job);
    const whole = encoder.encode(JSON.stringify(row));
    const split = whole.length > MAX_ROW_BYTES;
    const bytes = split ? encoder.encode(JSON.stringify({ ...row, result: null, extra: {}, [SPLIT]: true })) : whole;
    if (bytes.length > MAX_ROW_BYTES) throw new RangeError(`job ${job.job_id}: the stored row without its result and extras is ${bytes.length} bytes, over ${MAX_ROW_BYTES}`);
    return this.#call("upsert", split ? this.transferTimeoutMs : this.timeoutMs, async () => {
      const key = this.names.storeJobKey(row.job_id);
      const activeKey = row.project_id === null ? null : this.names.storeActiveKey(row.project_id, row.job_id);
      for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
        const entry = live(await this.kv.get(key));
        const current = entry ? (entry.json() as StoredJob) : null;
        if (!accepts(current, row)) return "stale";

        let activeRevision: number | undefined;
        if (activeKey && isActiveStatus(row.status)) {
          // Put before the row turns active; an already-active row of the same project has its key.
          const keyed = current && isActiveStatus(current.status) && current.project_id === row.project_id;
          if (!keyed) await this.kv.put(activeKey, encoder.encode(row.job_id));
        } else if (activeKey) {
          activeRevision = live(await this.kv.get(activeKey))?.revision;
        }

        // The whole first: a key that says split always has it to point to.
        if (split) await this.objects.putBlob({ name: this.names.storeRowObject(row.job_id, row.fence) }, whole);
        try {
          if (entry) {
            await this.kv.update(key, bytes, entry.revision);
          } else {
            await this.index.add(row);
            await this.kv.create(key, bytes);
          }
        } catch (error) {
          if (!isWrongLastSequence(error)) throw error;
          await sleep(Math.random() * Math.min(50, 2 ** attempt)); // lost the race: re-read and decide again
          continue;
        }

        if (activeKey && activeRevision !== undefined) {
          // Only if nobody re-activated the job since we looked (a newer run puts the key again).
          await this.kv.delete(activeKey, { previousSeq: activeRevision }).catch((error: unknown) => {
            if (!isWrongLastSequence(error)) throw error;
          });
        }
        return "written";
      }
      throw new Error(`job ${row.job_id}: gave up after ${MAX_CAS_ATTEMPTS} concurrent writes`);
    });
  }

  getJob(jobId: string): Promise<StoredJob | null> {
    if (!JOB_ID.test(jobId)) return Promise.resolve(null);
    return this.#call("read", this.timeoutMs, () => this.#row(jobId));
  }

  listJobs(limit: number, owner?: string): Promise<StoredJob[]> {
    const want = Math.max(0, Math.floor(limit));
    if (want === 0) return Promise.resolve([]);
    return this.#call("listing", this.timeoutMs, async () => {
      // From the stream leader: a replica behind it would start the listing below the newest jobs.
      // The stream's bounds, not its last entry: the newest job may have been deleted, and entries
      // deleted with their jobs leave gaps anywhere between the first and the last sequence.
      const state = await this.jsm.streams
        .info(this.names.storeIndexStream)
        .then((info) => info.state)
        .catch((error: unknown) => (isStreamOrMessageNotFound(error) ? null : Promise.reject(error)));
      if (!state || state.messages === 0) return [];
      const limiter = pLimit(READ_CONCURRENCY);
      const target = want + Math.min(want, LISTING_SLACK);
      // Bounded: repeated or vanished entries are rare (a de-duplication window missed, a row expired).
      const maxScanned = 4 * target + 64 + (owner === undefined ? 0 : MAX_FOREIGN_SCAN);
      const rows = new Map<string, StoredJob>();
      const seen = new Set<string>();
      let next = state.last_seq;
      let scanned = 0;
      let gaps = 0;
      let skipped = false;
      while (rows.size < target && next >= state.first_seq && scanned < maxScanned && gaps < MAX_DELETED_SCAN) {
        // Larger rounds only once other owners' entries or deleted jobs' gaps turn up (a one-owner store without deletes reads exactly as many as it needs).
        const count = Math.min(Math.max(target - rows.size, skipped ? FILTERED_BATCH : 0), next - state.first_seq + 1, maxScanned - scanned);
        const seqs = Array.from({ length: count }, (_, i) => next - i);
        next -= count;
        const entries = await Promise.all(
          seqs.map((seq) => limiter(() => this.index.entry(seq))),
        );
        const ids: string[] = [];
        for (const message of entries) {
          // A deleted job's entry (or one aged out since the bounds were read): a gap, not the end.
          if (!message) {
            gaps++;
            skipped = true;
            continue;
          }
          scanned++;
          const indexed = parseIndexEntry(message.data);
          const id = indexed?.job_id;
          if (indexed && !ownedBy(indexed, owner)) {
            skipped = true;
            continue;
          }
          if (id && !seen.has(id)) {
            seen.add(id);
            ids.push(id);
          }
        }
        const found = await Promise.all(ids.map((id) => limiter(() => this.#row(id))));
        // The row decides (the entry only spares reading other clients' rows).
        for (const row of found) if (row && ownedBy(row, owner)) rows.set(row.job_id, row);
      }
      return [...rows.values()].sort(newestFirst).slice(0, want);
    });
  }

  activeJobs(projectId: number, owner?: string): Promise<StoredJob[]> {
    let keys: Awaited<ReturnType<KV["keys"]>> | undefined;
    const stop = () => keys?.stop();
    return this.#call("active-job look-up", this.timeoutMs, async () => {
      const ids: string[] = [];
      keys = await this.kv.keys(this.names.storeActiveKeys(projectId));
      try {
        for await (const key of keys) {
          ids.push(key.slice(key.lastIndexOf(".") + 1));
          if (ids.length >= MAX_ACTIVE_KEYS) break;
        }
      } finally {
        keys.stop();
      }
      const limiter = pLimit(READ_CONCURRENCY);
      const rows = await Promise.all(ids.map((id) => limiter(() => this.#row(id))));
      // The index may hold a stale key (a crash between writes, a refused write): the row decides.
      return rows
        .filter((row): row is StoredJob => row !== null && row.project_id === projectId && isActiveStatus(row.status) && ownedBy(row, owner))
        .sort(newestFirst);
    }, stop);
  }

  /**
   * The row's listing entry, then its objects (a split row's whole; items an older version stored)
   * and its keys (row and active-job key), each subject purged so no marker is left: a failure
   * half-way leaves the row, so a repeat finds the job again.
   */
  deleteJob(jobId: string): Promise<void> {
    if (!JOB_ID.test(jobId)) return Promise.resolve();
    return this.#call("delete", this.transferTimeoutMs, async () => {
      const row = await this.#row(jobId);
      if (row) await this.index.remove(jobId, row.created_at);
      await eraseObjectsNaming(this.jsm, this.objects, this.names.storeItemsBucket, jobId);
      await eraseKeysNaming(this.jsm, this.names.storeBucket, jobId);
    });
  }

  /** The connection belongs to the caller; nothing else to release. */
  async close(): Promise<void> {}

  async #row(jobId: string): Promise<StoredJob | null> {
    const entry = live(await this.kv.get(this.names.storeJobKey(jobId)));
    if (!entry) return null;
    const { [SPLIT]: split, ...row } = entry.json<StoredJob & { [SPLIT]?: boolean }>();
    if (!split) return row;
    // A read stalled by a concurrent rewrite of the whole (purging the chunks it waits for) reads it again.
    return (await this.wholes.getJson<StoredJob>(this.names.storeRowObject(jobId, row.fence))) ?? row;
  }

  /** Bounded in time; readiness follows the last call (an outage shows until a call succeeds). */
  async #call<T>(what: string, ms: number, run: () => Promise<T>, onTimeout?: () => void): Promise<T> {
    try {
      const value = await withDeadline(ms, `job store ${what}`, run, onTimeout);
      this.#lastError = undefined;
      return value;
    } catch (error) {
      this.#lastError = shortReason(error);
      throw error;
    }
  }
}

/** The entry if it holds a value (not a delete marker). */
const live = (entry: KvEntry | null): KvEntry | null => (entry && entry.operation === "PUT" ? entry : null);

const newestFirst = (a: StoredJob, b: StoredJob) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0);

function checkJobId(jobId: string): void {
  if (!JOB_ID.test(jobId)) throw new RangeError(`job ids in the store are 1-128 letters, digits, '-' or '_' (got ${JSON.stringify(jobId.slice(0, 40))})`);
}

