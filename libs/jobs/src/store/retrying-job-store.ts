import type { Logger } from "@litrev/telemetry";
import { retrying } from "../retry";
import { accepts, type JobStore, type StoredJob, type UpsertOutcome, type WriteWait } from "./job-store";

/** A write the store refused as malformed (a bad fence or id, a row too large) would fail forever: not kept. */
const invalid = (error: unknown) => error instanceof RangeError;

/**
 * The one mechanism for a store write that fails (the store briefly unreachable), on the project's
 * retry policy (`retrying`): a write given a `wait` is retried for that long (the worker's terminal
 * writes), then — like every other failed write at once — kept and written again in the background
 * until it lands, so jobs that start, progress or finish during an outage are all stored once it is
 * over. Per job, only the write that the fencing rule would keep is retained (the newest of equal
 * fence, the highest fence otherwise), and the writes of one job run one after another. A failed write still rejects (callers log it); a `stale`
 * outcome is final and never retried, nor is a write refused as malformed (RangeError); reads pass
 * through.
 */
export class RetryingJobStore implements JobStore {
  readonly kind: JobStore["kind"];
  readonly persistent: boolean;
  readonly #jobs = new Map<string, StoredJob>();
  /** The tail of each job's chain of writes. */
  readonly #chains = new Map<string, Promise<unknown>>();
  /** Stops the background retries and the waits of writes in flight. */
  readonly #closing = new AbortController();
  /** The background retries of the kept writes, while there are any. */
  #background: Promise<void> | undefined;
  /** Writes being retried for their caller's wait: waiting for the store too. */
  #waiting = 0;
  /** Callers' writes on their way to the store (one that fails is kept): none may be, to say all are saved. */
  #inFlight = 0;
  #reported = false;

  constructor(
    private readonly inner: JobStore,
    private readonly logger: Logger,
  ) {
    this.kind = inner.kind;
    this.persistent = inner.persistent;
  }

  /** Writes waiting for the store: kept, or being retried for their caller. */
  get pending(): number {
    return this.#keptCount + this.#waiting;
  }

  get #keptCount(): number {
    return this.#jobs.size;
  }

  status(): string {
    const inner = this.inner.status();
    return inner === "ok" && this.pending > 0 ? `error: ${this.pending} write(s) waiting for the job store` : inner;
  }

  describe(): string {
    return this.inner.describe();
  }

  upsertJob(job: StoredJob, wait?: WriteWait): Promise<UpsertOutcome> {
    return this.#serial(job.job_id, async () => {
      const kept = this.#jobs.get(job.job_id);
      // Superseded by this write, whatever becomes of it — unless the kept one would win over it.
      if (kept && accepts(kept, job)) this.#jobs.delete(job.job_id);
      try {
        return await this.#attempt(() => this.inner.upsertJob(job), wait);
      } catch (error) {
        if (!invalid(error)) this.#keepJob(job);
        throw error;
      }
    });
  }

  getJob(jobId: string): Promise<StoredJob | null> {
    return this.inner.getJob(jobId);
  }

  listJobs(limit: number, owner?: string): Promise<StoredJob[]> {
    return this.inner.listJobs(limit, owner);
  }

  activeJobs(projectId: number, owner?: string): Promise<StoredJob[]> {
    return this.inner.activeJobs(projectId, owner);
  }

  /** After the job's writes in flight, and with its kept writes dropped (they would bring it back). */
  deleteJob(jobId: string): Promise<void> {
    return this.#serial(jobId, async () => {
      this.#jobs.delete(jobId);
      await this.inner.deleteJob(jobId);
    });
  }

  /** Tries the waiting writes once more, then closes; what still cannot be written is reported. */
  async close(): Promise<void> {
    this.#closing.abort(new Error("job store closing"));
    await this.#background;
    // Writes cut short in their wait are kept as their chains unwind: let them, then try once more.
    await Promise.all(this.#chains.values());
    if (this.pending > 0) await this.flush();
    if (this.pending > 0) this.logger.error({ pending: this.pending }, "job store: writes still waiting for the store are lost at shutdown");
    await this.inner.close();
  }

  /** Writes every waiting write once; a `stale` outcome ends it too. */
  async flush(): Promise<void> {
    await Promise.all(
      [...this.#jobs.keys()].map((id) =>
        this.#serial(id, async () => {
          // Writes of one job are serialised, so what is kept cannot change while it is written;
          // it stays counted as waiting until the write has landed (or was refused as stale).
          const job = this.#jobs.get(id);
          if (job) {
            await this.inner.upsertJob(job);
            this.#jobs.delete(id);
          }
        }).catch(() => undefined),
      ),
    );
    if (this.pending === 0 && this.#inFlight === 0 && this.#reported) {
      this.#reported = false;
      this.logger.info("job store: writes that waited for the store are saved");
    }
  }

  /** Keeps `job` unless a kept write of the same job would win over it. */
  #keepJob(job: StoredJob): void {
    const kept = this.#jobs.get(job.job_id);
    if (!kept || accepts(kept, job)) this.#jobs.set(job.job_id, job);
    this.#kept();
  }

  /** One write, retried by the policy for as long as its caller waits (once without a wait). */
  async #attempt(write: () => Promise<UpsertOutcome>, wait: WriteWait | undefined): Promise<UpsertOutcome> {
    this.#inFlight++;
    try {
      if (!wait || wait.budgetMs <= 0 || this.#closing.signal.aborted) return await write();
      this.#waiting++;
      try {
        const signal = wait.signal ? AbortSignal.any([wait.signal, this.#closing.signal]) : this.#closing.signal;
        return await retrying(write, { budgetMs: wait.budgetMs, signal, isFinal: invalid });
      } finally {
        this.#waiting--;
      }
    } finally {
      this.#inFlight--;
    }
  }

  #kept(): void {
    if (!this.#reported) {
      this.#reported = true;
      this.logger.warn("job store: the store is unreachable; failed writes are kept and retried");
    }
    this.#retryInBackground();
  }

  /** Writes the kept writes again, on the retry policy's backoff, until none is left or the store closes. */
  #retryInBackground(): void {
    if (this.#background || this.#closing.signal.aborted) return;
    const retried = () =>
      retrying(
        async (attempt) => {
          // Attempt 1 is the write that was just kept: it failed a moment ago, so the first pass waits too.
          if (attempt > 1) await this.flush();
          if (this.#keptCount > 0) throw new Error(`${this.#keptCount} write(s) still waiting for the job store`);
        },
        { budgetMs: Number.POSITIVE_INFINITY, signal: this.#closing.signal },
      );
    this.#background = retried()
      .catch(() => undefined)
      .finally(() => {
        this.#background = undefined;
        if (this.#keptCount > 0) this.#retryInBackground();
      });
  }

  #serial<T>(jobId: string, write: () => Promise<T>): Promise<T> {
    const previous = this.#chains.get(jobId) ?? Promise.resolve();
    const next = previous.then(write, write);
    const tail = next.catch(() => undefined);
    this.#chains.set(jobId, tail);
    void tail.then(() => {
      if (this.#chains.get(jobId) === tail) this.#chains.delete(jobId);
    });
    return next;
  }
}
