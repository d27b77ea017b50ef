import type { LiveJobState } from "@litrev/contracts";

/**
 * A job as the system of record keeps it: the live state without the worker's bookkeeping, plus the
 * job's small result extras (e.g. screening clusters). Per-item results live apart (`replaceItems`),
 * so no stored document grows with the job's size.
 */
export type StoredJob = Omit<LiveJobState, "version" | "type" | "attempt" | "handoffs" | "worker" | "result"> & {
  result: Record<string, unknown> | null;
};

export type JsonRecord = Record<string, unknown>;

/**
 * The persistence port of a job service. One real implementation (MongoDB) and two without a
 * database: `NoJobStore` (the spec's "continue without persistence") and `MemoryJobStore` (tests).
 * Writes are upserts keyed by job id, so a retried or redelivered write is harmless.
 */
export interface JobStore {
  readonly kind: "mongodb" | "memory" | "none";
  /** False when jobs are not kept beyond their live state (listing empty, terminal jobs readable once). */
  readonly persistent: boolean;
  /** For readiness: `ok` or `error: <reason>`. */
  status(): string;
  upsertJob(job: StoredJob): Promise<void>;
  getJob(jobId: string): Promise<StoredJob | null>;
  /** Newest first. */
  listJobs(limit: number): Promise<StoredJob[]>;
  /** Pending or running jobs of a project, as stored. */
  activeJobs(projectId: number): Promise<StoredJob[]>;
  /** Replaces the job's items (idempotent: a redelivered job writes the same rows again). */
  replaceItems(jobId: string, items: readonly JsonRecord[]): Promise<void>;
  /** Items in their original order. */
  getItems(jobId: string): Promise<JsonRecord[]>;
  close(): Promise<void>;
}

/** The stored form of a live state. */
export function toStoredJob(state: LiveJobState, result: Record<string, unknown> | null = null): StoredJob {
  const { version: _v, type: _t, attempt: _a, handoffs: _h, worker: _w, result: _r, ...rest } = state;
  return { ...rest, result };
}

/** Without a database: nothing is kept, so reads find nothing (spec: listing empty, 404 after the first terminal poll). */
export class NoJobStore implements JobStore {
  readonly kind = "none";
  readonly persistent = false;
  constructor(private readonly reason = "no database configured (MONGO_URL is not set); running without persistence") {}
  status(): string {
    return `error: ${this.reason}`;
  }
  async upsertJob(_job: StoredJob): Promise<void> {}
  async getJob(_jobId: string): Promise<StoredJob | null> {
    return null;
  }
  async listJobs(_limit: number): Promise<StoredJob[]> {
    return [];
  }
  async activeJobs(_projectId: number): Promise<StoredJob[]> {
    return [];
  }
  async replaceItems(_jobId: string, _items: readonly JsonRecord[]): Promise<void> {}
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
  async upsertJob(job: StoredJob): Promise<void> {
    this.jobs.set(job.job_id, structuredClone(job));
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
  async replaceItems(jobId: string, items: readonly JsonRecord[]): Promise<void> {
    this.items.set(jobId, structuredClone([...items]));
  }
  async getItems(jobId: string): Promise<JsonRecord[]> {
    return structuredClone(this.items.get(jobId) ?? []);
  }
  async close(): Promise<void> {}
}
