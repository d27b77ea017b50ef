import { isTerminalStatus, type JobStatus, type LiveJobState } from "@litrev/contracts";
import { finiteOrNull } from "../finite";
import { ownedBy } from "../state";

/**
 * A job as the system of record keeps it: the live state without the worker's bookkeeping, plus the
 * job's small result extras (e.g. screening clusters) and its fencing token. Its per-item results
 * live only in its finished artifact (`artifact.ts`, named by the job id: `finished/<id>/head`), so
 * no stored row grows with the job's size.
 */
export type StoredJob = Omit<LiveJobState, "version" | "type" | "attempt" | "handoffs" | "worker" | "result" | "releasable"> & {
  result: Record<string, unknown> | null;
  /** Fencing token: the delivery number of the worker run that wrote this row (admission and reapers write the row's current fence; 0 at admission). */
  fence: number;
};

export type JsonRecord = Record<string, unknown>;

/** `stale` = refused by the fencing rule; nothing changed. */
export type UpsertOutcome = "written" | "stale";

/**
 * How long a caller waits for a write that fails to land, retried, before it rejects. Only the
 * store that keeps failed writes (`RetryingJobStore`, wrapping every real store) uses it; the
 * others try once.
 */
export interface WriteWait {
  budgetMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * The persistence port of a job service. Real implementations: the embedded JetStream store (the
 * default) and MongoDB (when MONGO_URL is set); `NoJobStore` is the spec's "continue without
 * persistence", `MemoryJobStore` is for tests. All of them pass `job-store.contract.ts`.
 *
 * Every write is fenced (see `accepts`): a worker that lost its job to a newer delivery, or a late
 * "running" write after the job ended, is refused with `stale` rather than overwriting newer data.
 */
export interface JobStore {
  readonly kind: "jetstream" | "mongodb" | "memory" | "none";
  /** False when jobs are not kept beyond their live state (listing empty, terminal jobs readable once). */
  readonly persistent: boolean;
  /** For readiness: `ok` or `error: <short reason>` (never credentials or raw driver text). */
  status(): string;
  /** Which store, for readiness, e.g. `jetstream (embedded, R1)` or `mongodb`. */
  describe(): string;
  /** Writes the row if the fencing rule accepts it (atomically, per job). */
  upsertJob(job: StoredJob, wait?: WriteWait): Promise<UpsertOutcome>;
  getJob(jobId: string): Promise<StoredJob | null>;
  /**
   * Newest `created_at` first; costs O(limit), never O(all jobs). With `owner`, only that client's
   * jobs (`ownedBy`: a row without an owner is the default owner's).
   */
  listJobs(limit: number, owner?: string): Promise<StoredJob[]>;
  /** Stored pending/running jobs of a project, newest `created_at` first; with `owner`, only that client's (`ownedBy`). */
  activeJobs(projectId: number, owner?: string): Promise<StoredJob[]>;
  /**
   * Erases the job: its row and its place in listings and active-job look-ups (and items an older
   * version stored beside it), leaving no trace in the store (a client's deletion). Nothing to do
   * for an unknown job. Its artifact is the caller's to erase.
   */
  deleteJob(jobId: string): Promise<void>;
  close(): Promise<void>;
}

/** The stored form of a live state; the fence defaults to the state's delivery number. */
export function toStoredJob(state: LiveJobState, result: Record<string, unknown> | null = null, fence: number = state.attempt): StoredJob {
  const { version: _v, type: _t, attempt: _a, handoffs: _h, worker: _w, result: _r, releasable: _rel, ...rest } = state;
  return { ...rest, result, fence };
}

export const isActiveStatus = (status: JobStatus) => status === "pending" || status === "running";

/**
 * The fencing rule, shared by every store: a write is accepted when there is no row, or when it
 * comes from the same or a newer run (fence at least the row's) — but never one that moves an ended
 * job back to pending/running, whatever its fence: a run that took the job over just after the
 * previous run stored its terminal row (its ack came late) must not make listings go backwards.
 * Rows written before fencing existed count as fence 0.
 */
export function accepts(stored: Pick<StoredJob, "fence" | "status"> | null, incoming: Pick<StoredJob, "fence" | "status">): boolean {
  if (!stored) return true;
  if (isTerminalStatus(stored.status) && isActiveStatus(incoming.status)) return false;
  return incoming.fence >= (stored.fence ?? 0);
}

/** Rejects fences that are not whole non-negative numbers (they would break the ordering). */
export function checkFence(fence: number): void {
  if (!Number.isSafeInteger(fence) || fence < 0) throw new RangeError(`a fence is a non-negative integer, got ${fence}`);
}

/** Without a database: nothing is kept, so reads find nothing (spec: listing empty, 404 after the first terminal poll). */
export class NoJobStore implements JobStore {
  readonly kind = "none";
  readonly persistent = false;
  constructor(private readonly reason = "no job store configured; running without persistence") {}
  status(): string {
    return `error: ${this.reason}`;
  }
  describe(): string {
    return "none";
  }
  /** "written" because nothing refused it: there is simply nothing kept. */
  async upsertJob(_job: StoredJob): Promise<UpsertOutcome> {
    return "written";
  }
  async getJob(_jobId: string): Promise<StoredJob | null> {
    return null;
  }
  async listJobs(_limit: number, _owner?: string): Promise<StoredJob[]> {
    return [];
  }
  async activeJobs(_projectId: number, _owner?: string): Promise<StoredJob[]> {
    return [];
  }
  async deleteJob(_jobId: string): Promise<void> {}
  async close(): Promise<void> {}
}

/** An in-process store with the persistent stores' semantics, for tests of code that persists jobs. */
export class MemoryJobStore implements JobStore {
  readonly kind = "memory";
  readonly persistent = true;
  readonly jobs = new Map<string, StoredJob>();
  status(): string {
    return "ok";
  }
  describe(): string {
    return "memory";
  }
  async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    checkFence(job.fence);
    if (!accepts(this.jobs.get(job.job_id) ?? null, job)) return "stale";
    this.jobs.set(job.job_id, finiteOrNull(structuredClone(job)));
    return "written";
  }
  async getJob(jobId: string): Promise<StoredJob | null> {
    const job = this.jobs.get(jobId);
    return job ? structuredClone(job) : null;
  }
  async listJobs(limit: number, owner?: string): Promise<StoredJob[]> {
    return [...this.jobs.values()]
      .filter((job) => ownedBy(job, owner))
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
      .slice(0, Math.max(0, limit))
      .map((job) => structuredClone(job));
  }
  async activeJobs(projectId: number, owner?: string): Promise<StoredJob[]> {
    return [...this.jobs.values()]
      .filter((j) => j.project_id === projectId && isActiveStatus(j.status) && ownedBy(j, owner))
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
      .map((job) => structuredClone(job));
  }
  async deleteJob(jobId: string): Promise<void> {
    this.jobs.delete(jobId);
  }
  async close(): Promise<void> {}
}
