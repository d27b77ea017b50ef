import type { LiveJobState } from "@litrev/contracts";

/**
 * A job as the system of record keeps it: the live state without the worker's bookkeeping, plus the
 * job's small result extras (e.g. screening clusters). Per-item results live apart (`replaceItems`),
 * so no stored document grows with the job's size.
 */
export type StoredJob = Omit<LiveJobState, "version" | "type" | "attempt" | "handoffs" | "worker" | "result" | "releasable"> & {
  result: Record<string, unknown> | null;
  /** Fencing token: the delivery number of the worker run that wrote this row (admission: 0). */
  fence: number;
};

/** `stale`: refused by the fencing rule (a newer run owns the job); nothing changed. */
export type UpsertOutcome = "written" | "stale";

export type JsonRecord = Record<string, unknown>;

/**
 * The persistence port of a job service. One real implementation (MongoDB) and two without a
 * database: `NoJobStore` (the spec's "continue without persistence") and `MemoryJobStore` (tests).
 * Writes are upserts keyed by job id, so a retried or redelivered write is harmless.
 */
export interface JobStore {
  readonly kind: "jetstream" | "mongodb" | "memory" | "none";
  /** False when jobs are not kept beyond their live state (listing empty, terminal jobs readable once). */
  readonly persistent: boolean;
  /** For readiness: `ok` or `error: <reason>`. */
  status(): string;
  /** Which store, for readiness. */
  describe(): string;
  /**
   * Accepted iff there is no row, or the incoming fence is higher, or it is equal and the write does
   * not take a terminal row back to pending/running; otherwise `stale`.
   */
  upsertJob(job: StoredJob): Promise<UpsertOutcome>;
  getJob(jobId: string): Promise<StoredJob | null>;
  /** Newest first. */
  listJobs(limit: number): Promise<StoredJob[]>;
  /** Pending or running jobs of a project, as stored. */
  activeJobs(projectId: number): Promise<StoredJob[]>;
  /** Replaces the job's items written under `fence` (idempotent); `stale` when the row's fence is higher. */
  replaceItems(jobId: string, fence: number, items: readonly JsonRecord[]): Promise<UpsertOutcome>;
  /** The items written under the fence of the job's current row, in their original order. */
  getItems(jobId: string): Promise<JsonRecord[]>;
  close(): Promise<void>;
}

/** The stored form of a live state. */
export function toStoredJob(state: LiveJobState, result: Record<string, unknown> | null = null, fence = state.attempt): StoredJob {
  const { version: _v, type: _t, attempt: _a, handoffs: _h, worker: _w, result: _r, releasable: _rel, ...rest } = state;
  return { ...rest, result, fence };
}

const isActiveStatus = (status: string) => status === "pending" || status === "running";

/** The fencing rule every store applies atomically per job. */
export function acceptsWrite(stored: Pick<StoredJob, "fence" | "status"> | null, incoming: Pick<StoredJob, "fence" | "status">): boolean {
  if (!stored || incoming.fence > stored.fence) return true;
  return incoming.fence === stored.fence && !(!isActiveStatus(stored.status) && isActiveStatus(incoming.status));
}

/** Without a database: nothing is kept, so reads find nothing (spec: listing empty, 404 after the first terminal poll). */
export class NoJobStore implements JobStore {
  readonly kind = "none";
  readonly persistent = false;
  constructor(private readonly reason = "no database configured (MONGO_URL is not set); running without persistence") {}
  status(): string {
    return `error: ${this.reason}`;
  }
  describe(): string {
    return "none";
  }
  async upsertJob(_job: StoredJob): Promise<UpsertOutcome> {
    return "written";
  }
  async getJob(_jobId: string): Promise<StoredJob | null> {
    return null;
  }
  async listJobs(_limit: number): Promise<StoredJob[]> {
    return [];
  }
  async activeJobs(_projectId: number): Promise<StoredJob[]> {
    return [];
  }
  async replaceItems(_jobId: string, _fence: number, _items: readonly JsonRecord[]): Promise<UpsertOutcome> {
    return "written";
  }
  async getItems(_jobId: string): Promise<JsonRecord[]> {
    return [];
  }
  async close(): Promise<void> {}
}

/** An in-process store with the MongoDB store's semantics, for tests of code that persists jobs. */
export class MemoryJobStore implements JobStore {
  readonly kind = "memory";
  readonly persistent = true;
  readonly jobs = new Map<string, StoredJob>();
  readonly items = new Map<string, JsonRecord[]>();
  status(): string {
    return "ok";
  }
  describe(): string {
    return "memory";
  }
  async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    if (!acceptsWrite(this.jobs.get(job.job_id) ?? null, job)) return "stale";
    this.jobs.set(job.job_id, structuredClone(job));
    return "written";
  }
  async getJob(jobId: string): Promise<StoredJob | null> {
    const job = this.jobs.get(jobId);
    return job ? structuredClone(job) : null;
  }
  async listJobs(limit: number): Promise<StoredJob[]> {
    return [...this.jobs.values()]
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
      .slice(0, limit)
      .map((job) => structuredClone(job));
  }
  async activeJobs(projectId: number): Promise<StoredJob[]> {
    return [...this.jobs.values()].filter((j) => j.project_id === projectId && (j.status === "pending" || j.status === "running"));
  }
  async replaceItems(jobId: string, fence: number, items: readonly JsonRecord[]): Promise<UpsertOutcome> {
    if ((this.jobs.get(jobId)?.fence ?? 0) > fence) return "stale";
    this.items.set(`${jobId}/${fence}`, structuredClone([...items]));
    return "written";
  }
  async getItems(jobId: string): Promise<JsonRecord[]> {
    const fence = this.jobs.get(jobId)?.fence ?? 0;
    return structuredClone(this.items.get(`${jobId}/${fence}`) ?? []);
  }
  async close(): Promise<void> {}
}
