import { isJobId, jobKind, ServiceError, type JobArtifactHead, type JobKindTable, type JobService, jobNotFound } from "@litrev/contracts";
import { ArtifactWriter, artifactJob, pollPieces, readArtifactHead } from "../artifact";
import { eraseJobData } from "../erase";
import type { FinishedJob } from "../finished/finished-job";
import type { JobData } from "../data";
import { isActive, ownedBy } from "../state";
import { toStoredJob, type JobStore } from "../store/job-store";
import { storageRead } from "../store/storage-read";
import type { JobMirror, MirrorEntry } from "./mirror";
import type { PartialReader } from "./partial-reader";
import type { PromptInstructions } from "../finished/report";


/** The error category of a job the orphan rule failed: it never stored items, so its artifact is written from its row. */
const ORPHANED = "orphan_cleanup";
const notFinished = (jobId: string, status: string) =>
  new ServiceError("conflict", `Job ${jobId} is still ${status}: its export and report are available once it has finished`, { simple: true });

/**
 * The reads of one job kind, the same for screening and indexer jobs: a pending or running job is
 * answered from the live state (with the items it finished so far), a finished job from its
 * artifact (written by the worker that ended it), a listing from the store of record. A poll
 * through this reader releases a finished job's live entry once the artifact is in place (the
 * spec's "removed from the in-memory registry the first time it is polled"). Reading never
 * changes stored state: a job that ended without items or artifact gets an empty one written from
 * its row (`ensureArtifact`).
 */
export class JobReader {
  readonly #view: JobKindTable;
  /** Artifacts being looked up or written from a row, by job: concurrent reads share one. */
  readonly #writing = new Map<string, Promise<JobArtifactHead | null>>();

  constructor(
    readonly service: JobService,
    private readonly mirror: JobMirror,
    private readonly data: JobData,
    private readonly partials: PartialReader,
    private readonly store: JobStore,
  ) {
    this.#view = jobKind(service);
  }

  /** The poll body of a live entry that is still active (the gateway's hot path uses the same). */
  async active(entry: MirrorEntry): Promise<unknown> {
    const partial = await this.partials.read(entry.state.job_id, entry.state.extra);
    return this.#view.view(entry.state, null, partial);
  }

  /**
   * A poll, for callers on NATS (the gateway streams finished jobs from their artifacts itself):
   * an active job from the live state, read directly (the service's copy may be stale: a process
   * that was stopped answers queued requests the moment it resumes), a finished job's poll body
   * from its artifact. For `owner` when given: another client's job is not found, and its live
   * entry is not released by that client's poll (the check comes first).
   */
  async get(jobId: string, owner?: string, prompts?: PromptInstructions): Promise<unknown> {
    // Not a UUID: no job has it, and it may not even be a valid bucket key.
    if (!isJobId(jobId)) throw jobNotFound();
    const entry = await this.mirror.read(jobId);
    if (entry && !ownedBy(entry.state, owner)) throw jobNotFound();
    if (entry && isActive(entry.state)) return this.active(entry);
    const head = await this.ensureArtifact(jobId, owner, prompts);
    if (entry) await this.mirror.removeIfUnchanged(jobId, entry);
    const pieces: Buffer[] = [];
    for await (const piece of pollPieces(this.data, head)) pieces.push(Buffer.from(piece));
    // Without a store of record the job lived only until this first poll (the spec's "without persistence").
    if (head.persistent === false) await eraseJobData(this.data, jobId);
    return JSON.parse(Buffer.concat(pieces).toString("utf8")) as unknown;
  }

  /** A finished job's record and items, chunk by chunk from its artifact (written first if it has none), for `owner` when given. */
  async finished(jobId: string, owner?: string): Promise<FinishedJob> {
    return artifactJob(this.data, await this.ensureArtifact(jobId, owner));
  }

  /**
   * The finished job's artifact head, for `owner` when given. A job that ended without one and has
   * no items (failed as an orphan; ended with no store of record) gets it written now, once however
   * many readers ask. Not found: no such job, another client's, or one whose artifact is gone (its
   * items went with it: expired, or a job that finished before the store of record stopped keeping
   * items, docs/jobs.md § Upgrades); a conflict while it is still active.
   */
  async ensureArtifact(jobId: string, owner?: string, prompts?: PromptInstructions): Promise<JobArtifactHead> {
    if (!isJobId(jobId)) throw jobNotFound();
    let write = this.#writing.get(jobId);
    if (!write) {
      write = this.#artifact(jobId, prompts);
      this.#writing.set(jobId, write);
      const forget = () => this.#writing.delete(jobId);
      write.then(forget, forget);
    }
    const head = await write;
    if (head && ownedBy(head, owner)) return head;
    if (head) throw jobNotFound();
    const entry = await this.mirror.read(jobId);
    if (entry && ownedBy(entry.state, owner) && isActive(entry.state)) throw notFinished(jobId, entry.state.status);
    throw jobNotFound();
  }

  async #artifact(jobId: string, prompts?: PromptInstructions): Promise<JobArtifactHead | null> {
    const found = await readArtifactHead(this.data, jobId);
    if (found) return found;
    const row = this.store.persistent ? await storageRead(this.store, () => this.store.getJob(jobId)) : null;
    // No row (no store, or not saved): a terminal live state is all there is; its job has no stored items.
    const ended = row ?? (await this.mirror.read(jobId).then((entry) => (entry && !isActive(entry.state) ? toStoredJob(entry.state) : null)));
    if (!ended || isActive(ended) || (row && row.error_category !== ORPHANED)) return null;
    return new ArtifactWriter(this.data, this.service, jobId, ended.fence).finish(ended, prompts);
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
    if ((known && isActive(known.state)) || !jobKind(this.service).exclusiveProject) return known && isActive(known.state) ? known : null;
    const locked = await this.mirror.lockedJob(projectId, owner);
    return locked && ownedBy(locked.state, owner) ? locked : null;
  }
}
