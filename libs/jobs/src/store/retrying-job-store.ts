import type { Logger } from "@litrev/telemetry";
import type { JobStore, JsonRecord, StoredJob, UpsertOutcome } from "./job-store";

const RETRY_MS = 2_000;

/**
 * Keeps writes that failed (the database briefly unreachable) and writes them again in the
 * background until they land, so jobs that start, progress or finish during a database outage are
 * all in the database once it is back. Only the newest write per job is kept, and the writes of
 * one job run one after another, so a retried older write never overwrites a newer one. A failed
 * write still rejects (callers log it); reads pass through.
 */
export class RetryingJobStore implements JobStore {
  readonly kind: JobStore["kind"];
  readonly persistent: boolean;
  readonly #jobs = new Map<string, StoredJob>();
  readonly #items = new Map<string, { fence: number; items: readonly JsonRecord[] }>();
  /** The tail of each job's chain of writes. */
  readonly #chains = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #reported = false;

  constructor(
    private readonly inner: JobStore,
    private readonly logger: Logger,
    private readonly retryMs = RETRY_MS,
  ) {
    this.kind = inner.kind;
    this.persistent = inner.persistent;
  }

  /** Writes waiting for the database. */
  get pending(): number {
    return this.#jobs.size + this.#items.size;
  }

  status(): string {
    const inner = this.inner.status();
    return inner === "ok" && this.pending > 0 ? `error: ${this.pending} write(s) waiting for the database` : inner;
  }

  describe(): string {
    return this.inner.describe();
  }

  upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    return this.#serial(job.job_id, async () => {
      this.#jobs.delete(job.job_id); // superseded by this newer write, whatever becomes of it
      try {
        return await this.inner.upsertJob(job);
      } catch (error) {
        this.#keep(this.#jobs, job.job_id, job);
        throw error;
      }
    });
  }

  replaceItems(jobId: string, fence: number, items: readonly JsonRecord[]): Promise<UpsertOutcome> {
    return this.#serial(jobId, async () => {
      this.#items.delete(jobId);
      try {
        return await this.inner.replaceItems(jobId, fence, items);
      } catch (error) {
        this.#keep(this.#items, jobId, { fence, items });
        throw error;
      }
    });
  }

  getJob(jobId: string): Promise<StoredJob | null> {
    return this.inner.getJob(jobId);
  }

  listJobs(limit: number): Promise<StoredJob[]> {
    return this.inner.listJobs(limit);
  }

  activeJobs(projectId: number): Promise<StoredJob[]> {
    return this.inner.activeJobs(projectId);
  }

  getItems(jobId: string): Promise<JsonRecord[]> {
    return this.inner.getItems(jobId);
  }

  /** Tries the waiting writes once more, then closes; what still cannot be written is reported. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    if (this.pending > 0) await this.flush();
    if (this.pending > 0) this.logger.error({ pending: this.pending }, "job store: writes still waiting for the database are lost at shutdown");
    await this.inner.close();
  }

  /** Writes every waiting write once (items before the job, as the worker does). */
  async flush(): Promise<void> {
    const ids = new Set([...this.#items.keys(), ...this.#jobs.keys()]);
    await Promise.all(
      [...ids].map((id) =>
        this.#serial(id, async () => {
          const items = this.#items.get(id);
          if (items) {
            this.#items.delete(id);
            await this.inner.replaceItems(id, items.fence, items.items).catch(() => this.#items.has(id) || this.#items.set(id, items));
          }
          const job = this.#jobs.get(id);
          if (job) {
            this.#jobs.delete(id);
            await this.inner.upsertJob(job).catch(() => this.#jobs.has(id) || this.#jobs.set(id, job));
          }
        }).catch(() => undefined),
      ),
    );
    if (this.pending === 0 && this.#reported) {
      this.#reported = false;
      this.logger.info("job store: writes that waited for the database are saved");
    }
  }

  #keep<T>(map: Map<string, T>, id: string, value: T): void {
    map.set(id, value);
    if (!this.#reported) {
      this.#reported = true;
      this.logger.warn("job store: the database is unreachable; failed writes are kept and retried");
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush().finally(() => {
        if (this.pending > 0) this.#schedule();
      });
    }, this.retryMs);
    this.#timer.unref?.();
  }

  #serial<T>(jobId: string, write: () => Promise<T>): Promise<T> {
    const previous = this.#chains.get(jobId) ?? Promise.resolve();
    const next = previous.then(write, write);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.#chains.set(jobId, tail);
    void tail.then(() => {
      if (this.#chains.get(jobId) === tail) this.#chains.delete(jobId);
    });
    return next;
  }
}
