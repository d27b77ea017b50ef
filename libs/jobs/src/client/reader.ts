import { randomUUID } from "node:crypto";
import { DEFAULT_JOB_OWNER, isJobId, JOB_KINDS, operations, ServiceError, type JobService } from "@litrev/contracts";
import { StreamedBody } from "@litrev/messaging";
import type { JobData } from "../data";
import { isActive, ownedBy } from "../state";
import type { JobStore, JsonRecord, StoredJob } from "../store/job-store";
import { storageRead } from "../store/storage-read";
import { finishedWhileRead, writeFinishedBody } from "./finished-bodies";
import type { JobMirror, MirrorEntry } from "./mirror";
import type { PartialReader } from "./partial-reader";
import { JOB_VIEWS, type JobRecord, type JobResults } from "./views";

/** A stored job's poll body, with the row it came from (whose owner decides who may see it). */
interface StoredRead {
  row: StoredJob;
  /** The poll body: a value, or a `StreamedBody` for results of more than one stored chunk. */
  body: unknown;
}

/** Stands in for the item list while the fixed parts of a streamed poll body are serialised. */
const ITEMS_MARK = `\u0000litrev:${randomUUID()}\u0000`;
const ITEMS_MARK_JSON = JSON.stringify(ITEMS_MARK);
/** How long concurrent polls of one finished job may share one streamed body. */
const SHARE_MS = 60_000;

/** The poll's response schema per kind: a whole body is written as a caller of the poll operation reads it (its key order). */
const POLL_RESPONSE = { screening: operations.getScreeningJob.response, indexer: operations.getIndexerJob.response } satisfies Record<JobService, unknown>;

const notFound = () => new ServiceError("not_found", "Job not found", { simple: true });
const notFinished = (jobId: string, status: string) =>
  new ServiceError("conflict", `Job ${jobId} is still ${status}: its export and report are available once it has finished`, { simple: true });

/** A terminal job as exports and reports read it: the record, its small extras, and its items chunk by chunk. */
export interface FinishedJob {
  record: JobRecord;
  result: JsonRecord;
  chunks: () => AsyncIterable<JsonRecord[]>;
}

/**
 * The reads of one job kind, the same for screening and indexer jobs: a pending or running job is
 * answered from the live state (with the items it finished so far), a terminal job and a listing
 * from the store of record. The first poll of a terminal job releases its live entry (the spec's
 * "removed from the in-memory registry the first time it is polled") — but only when the state
 * says the store holds it (`releasable`), so a read never destroys the only copy of anything.
 * Reading never changes stored state.
 */
export class JobReader {
  readonly #view;
  /** Terminal reads in progress by job: concurrent polls of one finished job share one read of its results. */
  readonly #reads = new Map<string, Promise<StoredRead | null>>();

  constructor(
    readonly service: JobService,
    private readonly mirror: JobMirror,
    private readonly data: JobData,
    private readonly partials: PartialReader,
    private readonly store: JobStore,
  ) {
    this.#view = JOB_VIEWS[service];
  }

  /** The poll body of a live entry that is still active (the gateway's hot path uses the same). */
  async active(entry: MirrorEntry): Promise<unknown> {
    const partial = await this.partials.read(entry.state.job_id, entry.state.extra);
    return this.#view.job(entry.state, null, partial);
  }

  /**
   * A poll. The gateway answers active jobs from its own copy and asks the service only for the
   * rest, so this reads the bucket directly: the service's copy may be stale (a process that was
   * stopped answers queued requests the moment it resumes). For `owner` when given: another
   * client's job is not found, and its first terminal poll by another client releases nothing (the
   * check comes before the release).
   */
  async get(jobId: string, owner?: string): Promise<unknown> {
    // Not a UUID: no job has it, and it may not even be a valid bucket key.
    if (!isJobId(jobId)) throw notFound();
    const entry = await this.mirror.read(jobId);
    if (entry && !ownedBy(entry.state, owner)) throw notFound();
    if (entry && isActive(entry.state)) return this.active(entry);
    if (entry) {
      if (entry.state.releasable) await this.mirror.removeIfUnchanged(jobId, entry);
      const stored = await this.#stored(jobId, true);
      if (stored && ownedBy(stored.row, owner)) return stored.body;
      if (stored) throw notFound();
      return this.#view.job(entry.state, await this.#resultObject(entry), []);
    }
    const stored = await this.#stored(jobId, false);
    if (stored && ownedBy(stored.row, owner)) return stored.body;
    throw notFound();
  }

  /**
   * A terminal job with its results as chunks to read in turn (exports and reports): from the store
   * of record, or from the live entry while that holds the only copy. Same ownership and 404 rules
   * as a poll; a job still pending or running is a conflict (nothing to export yet). Reading never
   * releases the live entry: only a poll does.
   */
  async finished(jobId: string, owner?: string): Promise<FinishedJob> {
    if (!isJobId(jobId)) throw notFound();
    const entry = await this.mirror.read(jobId);
    if (entry && !ownedBy(entry.state, owner)) throw notFound();
    if (entry && isActive(entry.state)) throw notFinished(jobId, entry.state.status);
    const row = this.store.persistent ? await storageRead(this.store, () => this.store.getJob(jobId)) : null;
    if (row && !isActive(row)) {
      if (!ownedBy(row, owner)) throw notFound();
      const store = this.store;
      return {
        record: row,
        result: row.result ?? {},
        chunks: async function* () {
          const chunks = store.itemChunks(jobId)[Symbol.asyncIterator]();
          try {
            for (;;) {
              const step = await storageRead(store, () => chunks.next());
              if (step.done) return;
              yield step.value;
            }
          } finally {
            await chunks.return?.();
          }
        },
      };
    }
    if (entry) {
      const results = (await this.#resultObject(entry)) ?? { items: [], result: {} };
      return { record: entry.state, result: results.result, chunks: async function* () { yield results.items; } };
    }
    if (row && ownedBy(row, owner)) throw notFinished(jobId, row.status);
    throw notFound();
  }

  /** Newest first; only `owner`'s jobs when given. */
  async list(limit: number, owner?: string): Promise<unknown[]> {
    if (!this.store.persistent) return [];
    const rows = await storageRead(this.store, () => this.store.listJobs(limit, owner));
    return rows.map((row) => this.#view.listItem(row));
  }

  async activeForProject(projectId: number, owner?: string): Promise<unknown> {
    const entry = await this.activeEntry(projectId, owner);
    return entry ? this.active(entry) : null;
  }

  /**
   * The project's active job as the mirror knows it; for a kind with one active job per project,
   * also the job its admission lock names (a creation answered 409 a moment ago names that job,
   * and active-job must not deny it while the mirror catches up).
   */
  async activeEntry(projectId: number, owner?: string): Promise<MirrorEntry | null> {
    const candidate = await this.mirror.activeForProject(projectId, owner);
    // Confirmed by a direct read: a stale copy must not name a job that has ended.
    const known = candidate ? await this.mirror.read(candidate.state.job_id) : null;
    if ((known && isActive(known.state)) || !JOB_KINDS[this.service].exclusiveProject) return known && isActive(known.state) ? known : null;
    const locked = await this.mirror.lockedJob(projectId, owner);
    return locked && ownedBy(locked.state, owner) ? locked : null;
  }

  #stored(jobId: string, terminalOnly: boolean): Promise<StoredRead | null> {
    const key = `${terminalOnly}:${jobId}`;
    let read = this.#reads.get(key);
    if (!read) {
      read = this.#readStored(jobId, terminalOnly).then((stored) => this.#keepFinished(jobId, stored));
      this.#reads.set(key, read);
      const forget = () => {
        if (this.#reads.get(key) === read) this.#reads.delete(key);
      };
      // A streamed body is shared until it is parked (concurrent polls park it once), at most SHARE_MS.
      read.then((stored) => (stored?.body instanceof StreamedBody ? void stored.body.settled(SHARE_MS).then(forget) : forget()), forget);
    }
    return read;
  }

  /**
   * A terminal stored body is written once to the job data bucket as the finished body, from which
   * every gateway serves the job's later polls without asking this service: a whole body before
   * it is answered, a streamed one while it is parked for this poll (one read of the store). When
   * the write fails the poll is answered all the same: a later poll writes it again.
   */
  async #keepFinished(jobId: string, stored: StoredRead | null): Promise<StoredRead | null> {
    if (!stored || isActive(stored.row)) return stored;
    const head = { owner: stored.row.owner ?? DEFAULT_JOB_OWNER, status: stored.row.status };
    if (stored.body instanceof StreamedBody) return { row: stored.row, body: finishedWhileRead(this.data, jobId, head, stored.body) };
    try {
      await writeFinishedBody(this.data, jobId, head, POLL_RESPONSE[this.service].parse(stored.body));
    } catch {
      // No finished body this time (the bucket is unreachable, say): the service keeps answering.
    }
    return stored;
  }

  /**
   * The stored row with its results, or null (no store, no row, or an active row when only a
   * terminal one will do). Results of more than one stored chunk come as a `StreamedBody`: the
   * poll's exact JSON, its item list written chunk by chunk as the store gives them, so neither
   * this process nor the gateway ever holds them all.
   */
  async #readStored(jobId: string, terminalOnly: boolean): Promise<StoredRead | null> {
    if (!this.store.persistent) return null;
    const row = await storageRead(this.store, () => this.store.getJob(jobId));
    if (!row) return null;
    if (isActive(row)) return terminalOnly ? null : { row, body: this.#view.job(row, null, []) };
    const chunks = this.store.itemChunks(jobId)[Symbol.asyncIterator]();
    const next = () => storageRead(this.store, () => chunks.next());
    const first = await next();
    const second = first.done ? first : await next();
    if (second.done) return { row, body: this.#view.job(row, { items: first.done ? [] : first.value, result: row.result ?? {} }, []) };

    // The view around a placeholder list: what precedes and follows the items in the body.
    const text = JSON.stringify(this.#view.job(row, { items: [ITEMS_MARK as unknown as JsonRecord], result: row.result ?? {} }, []));
    const at = text.indexOf(ITEMS_MARK_JSON);
    if (at < 0) {
      // The view shows no items (e.g. a failed screening job): nothing more to read.
      await chunks.return?.();
      return { row, body: JSON.parse(text) as unknown };
    }
    const head = text.slice(0, at);
    const tail = text.slice(at + ITEMS_MARK_JSON.length);
    const pending = [first.value, second.value];
    const body = new StreamedBody(async function* () {
      yield head;
      let separator = "";
      // One chunk read ahead: the store's next chunk travels while this one is serialised.
      let ahead: ReturnType<typeof next> | undefined;
      for (;;) {
        let chunk: JsonRecord[] | undefined = pending.shift();
        if (!chunk) {
          const step = await (ahead ?? next());
          ahead = undefined;
          chunk = step.done ? undefined : step.value;
        }
        if (!chunk) break;
        if (pending.length === 0 && !ahead) {
          ahead = next();
          ahead.catch(() => undefined); // awaited in its turn
        }
        if (chunk.length === 0) continue;
        yield separator + chunk.map((item) => JSON.stringify(item)).join(",");
        separator = ",";
      }
      yield tail;
    });
    return { row, body };
  }

  async #resultObject(entry: MirrorEntry): Promise<JobResults | null> {
    const ref = entry.state.result;
    if (!ref) return { items: [], result: {} };
    if (ref.chunks === undefined) return (await this.data.getJson<JobResults>(ref.object)) ?? { items: [], result: {} };
    // A chunked list (the worker writes its results as it builds them): the head holds the extras.
    const head = await this.data.readHead<{ result?: JsonRecord }>(ref);
    if (!head) return { items: [], result: {} };
    const items: JsonRecord[] = [];
    for await (const chunk of this.data.readLines(ref)) for (const item of chunk) items.push(item as JsonRecord);
    return { items, result: head.result ?? {} };
  }
}
