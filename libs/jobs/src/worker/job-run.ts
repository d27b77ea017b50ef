import type { JsMsg } from "@nats-io/jetstream";
import { jobDataObjects, ServiceError, type JobRunCommand, type LiveJobState } from "@litrev/contracts";
import { isInfrastructureFailure } from "@litrev/messaging";
import { metrics, type Logger } from "@litrev/telemetry";
import { keyBindings } from "../key-sealer";
import type { LiveEntry, UpdatedEntry } from "../registry";
import { retrying } from "../retry";
import { applyProgress, cancelRequested, isActive, type ProgressReport } from "../state";
import { toStoredJob, type JsonRecord } from "../store/job-store";
import { ArtifactWriter } from "../artifact";
import { cancellationOf, JobCancelled, PartialFailure } from "./errors";
import { PartialWriter } from "./partial-writer";
import { completedState, exhaustion, failedState, holds, isStaleDelivery, takenState, type RunIdentity } from "./transitions";
import type { JobWorkerOptions } from "./types";
import { inputReads, inputTexts } from "./run-input";
import { arrayChunks, HandedBackError, LeaseLostError, type ItemChunks, type JobContext, type JobOutcome } from "./types";

/** How long a run stopped by a NATS or storage failure waits before its job is delivered again. */
const REDELIVERY_DELAY_MS = 2_000;

/** What a run needs: the worker's options, with the progress-write interval resolved. */
export type JobRunDeps = Omit<JobWorkerOptions, "concurrency" | "reportIntervalMs"> & { reportIntervalMs: number };

/** How long a terminal write to the store of record is retried before the store keeps it for later. */
const STORE_BUDGET_MS = 30_000;
/** A lease confirmed this recently serves a checkpoint save without another read (`#confirmLease`). */
const LEASE_CHECK_REUSE_MS = 50;

/**
 * One delivery of one job command, from taking the job to its terminal state. Every write it makes
 * for the job — live state, checkpoints, partial items, artifact head, store rows, clean-up, ack —
 * is fenced by its lease (the live state naming this delivery and this process): a run that lost
 * the lease touches nothing and says so in one log line. A terminal state reaches the job's
 * artifact and the store of record before the live state shows it.
 */
export class JobRun {
  readonly controller = new AbortController();
  /** Aborted when the job's client cancels it: stops the handler, never the run's own finishing writes. */
  readonly #cancel = new AbortController();
  /** The handler's signal: a hand-back, a lost lease, or a cancel. */
  readonly #signal = AbortSignal.any([this.controller.signal, this.#cancel.signal]);
  /** Set once the job was handed back on shutdown: nothing more may be written or acked. */
  released = false;
  /** Set once the handler returned or threw: the run ends on its own, shutdown leaves it be. */
  finishing = false;
  readonly identity: RunIdentity;
  readonly log: Logger;
  #pending: ProgressReport | undefined;
  #writtenStage = "";
  #lastWrite = 0;
  #writes: Promise<void> = Promise.resolve();
  #partials: PartialWriter | undefined;
  /** When this run last found that it held the lease: the start of the read or write that showed it. */
  #confirmedAt = 0;
  /** The lease check under way, shared by everything that waits on one. */
  #leaseCheck: Promise<unknown> | undefined;
  #command: JobRunCommand | undefined;

  constructor(
    private readonly deps: JobRunDeps,
    readonly jobId: string,
    readonly msg: JsMsg,
  ) {
    this.identity = { deliveries: msg.info.deliveryCount, instance: deps.instance };
    this.log = deps.logger.child({ job_id: jobId, delivery: this.identity.deliveries });
  }

  async execute(command: JobRunCommand): Promise<void> {
    const { infra } = this.deps;
    this.#command = command;
    const entry = await retrying(() => infra.registry.get(this.jobId), { signal: this.controller.signal });
    if (!entry) {
      this.log.warn("job command has no live state (expired or removed); discarded");
      this.msg.term();
      return;
    }
    if (!isActive(entry.state)) {
      this.msg.ack(); // finished before an earlier delivery could ack
      return;
    }
    const attempt = this.identity.deliveries - entry.state.handoffs;
    if (attempt > infra.options.maxAttempts) {
      await this.#exhausted();
      return;
    }
    let stale = false;
    const takenAt = Date.now();
    const taken = await infra.registry.update(this.jobId, (s) => {
      const now = new Date();
      stale = isStaleDelivery(s, this.identity, now, infra.options.ackWaitMs);
      return stale ? null : takenState(s, this.identity, now);
    });
    if (stale) {
      // Neither acked nor handed back: the command is the later run's to settle.
      this.log.info("an older delivery of a job a later delivery's run holds; left to that run");
      return;
    }
    if (!taken?.written) {
      this.msg.ack();
      return;
    }
    this.#writtenStage = taken.state.stage;
    this.#confirmedAt = takenAt;
    // Cancelled while queued, or while an earlier run held it: stops at the first call.
    if (cancelRequested(taken.state)) this.cancel();
    if (entry.state.status === "pending") moveStatus(infra.service, "pending", "running");
    void this.#saveProgressRow(taken.state);
    this.log.info({ attempt, resumed: this.identity.deliveries > 1 }, "job started");

    const heartbeat = setInterval(() => this.#heartbeat(), Math.max(200, Math.floor(infra.options.ackWaitMs / 3)));
    try {
      // A later delivery fences out the earlier runs' checkpoint saves before it loads any (the
      // first delivery has no earlier run to fence).
      if (this.identity.deliveries > 1) await retrying(() => infra.checkpoints.fence(this.jobId, this.identity.deliveries), { signal: this.controller.signal });
      const outcome = await this.deps.handler(this.#context(command, taken.state, attempt));
      if (this.released) return;
      this.finishing = true;
      await this.#finish(outcome, null);
    } catch (error) {
      if (this.released || error instanceof HandedBackError) return;
      this.finishing = true;
      if (this.#lostLease(error)) return this.log.warn("job taken over by another worker; this run stops without touching it");
      const cancelled = cancellationOf(this.#cancel.signal);
      if (!cancelled && isInfrastructureFailure(error) && attempt < infra.options.maxAttempts) {
        // Storage or messaging failed, not the job: the next delivery resumes from the checkpoints
        // (within JOB_MAX_ATTEMPTS; the last attempt fails the job as usual). Stored data found
        // missing is not such a failure: it stays missing (docs/resilience.md, open findings).
        this.log.warn({ err: error, attempt }, "job run stopped by a NATS or storage failure; it resumes on its next delivery");
        this.msg.nak(REDELIVERY_DELAY_MS);
        return;
      }
      // A cancel ends the job as cancelled whatever the aborted call threw; the handler's partial results are kept.
      const failure = cancelled ?? ServiceError.from(error instanceof PartialFailure ? error.failure : error);
      if (failure.category === "unknown") this.log.error({ err: error }, "job failed unexpectedly");
      else this.log.warn({ category: failure.category }, `job failed: ${failure.message}`);
      await this.#finish(error instanceof PartialFailure ? error.partial : {}, failure).catch((finishError: unknown) => {
        if (!this.#lostLease(finishError)) throw finishError;
        this.log.warn("job taken over by another worker while failing; this run stops without touching it");
      });
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * The job's client cancelled it: its calls in flight stop (the handler's signal) and the job ends
   * `failed` / `cancelled` with what finished, like any failure that keeps its partial results.
   */
  cancel(): void {
    if (this.released || this.finishing || this.#signal.aborted) return;
    this.log.info("job cancelled by its client; stopping its calls in flight");
    this.#cancel.abort(new JobCancelled());
  }

  /** Graceful stop: the job goes back to the queue at once, for another replica to resume. */
  async handBack(): Promise<void> {
    if (this.released || this.finishing) return;
    this.released = true;
    this.controller.abort(new HandedBackError("worker shutting down"));
    try {
      await this.deps.infra.registry.update(this.jobId, (s) =>
        holds(s, this.identity) && isActive(s) ? { ...s, handoffs: s.handoffs + 1, worker: null } : null,
      );
    } catch (error) {
      this.log.warn({ err: error }, "could not record the hand-back");
    }
    this.msg.nak();
    this.log.info("job handed back for another worker");
  }

  #context(command: JobRunCommand, state: LiveJobState, attempt: number): JobContext {
    const { infra, sealer } = this.deps;
    const signal = this.#signal;
    this.#partials = new PartialWriter(infra.data, this.jobId, this.identity.deliveries, async () => void (await this.#assertLease()));
    const partials = this.#partials;
    return {
      jobId: this.jobId,
      state,
      params: command.params,
      attempt,
      signal,
      // Bound to this job of this service: a token copied into another job's command does not open.
      providerKey: command.sealed_provider_key ? sealer.open(command.sealed_provider_key, keyBindings.job(infra.service, this.jobId)) : undefined,
      logger: this.log,
      // Reads and checkpoint saves ride out a NATS restart like the run's own writes do.
      ...inputReads(infra, command, signal),
      report: (report) => this.#report(report),
      leaseHeld: async () => void (await this.#confirmLease(infra.options.ackWaitMs / 2)),
      checkpoints: {
        load: <T>(stage: string) => retrying(() => infra.checkpoints.load<T>(this.jobId, stage), { signal }),
        save: async (stage, unit, data) => {
          await this.#confirmLease(LEASE_CHECK_REUSE_MS);
          // Safe to repeat: a checkpoint's message id de-duplicates a save that landed before its ack was lost.
          // Carries this run's fence: should the lease be lost between the check above and the
          // publish, loads after the new run's fence mark ignore it (CheckpointLog).
          await retrying(() => infra.checkpoints.save(this.jobId, stage, unit, data, this.identity.deliveries), {
            signal,
            isFinal: (e) => this.#lostLease(e),
          });
        },
      },
      partials: {
        append: async (items) => {
          const before = partials.ref.chunks;
          await partials.append(items);
          if (partials.ref.chunks !== before) await this.#report({ extra: { partial: partials.ref } });
        },
      },
    };
  }

  #lostLease(error: unknown): boolean {
    return error instanceof LeaseLostError || this.controller.signal.reason instanceof LeaseLostError;
  }

  /** The live state, read now; throws unless this run still holds the job. */
  async #assertLease(): Promise<LiveEntry> {
    if (this.released) throw new HandedBackError("worker shutting down");
    const started = Date.now();
    const entry = await retrying(() => this.deps.infra.registry.get(this.jobId), { signal: this.controller.signal });
    if (!entry || !holds(entry.state, this.identity)) this.#lose();
    this.#confirmed(started);
    return entry;
  }

  #confirmed(at: number): void {
    this.#confirmedAt = Math.max(this.#confirmedAt, at);
  }

  /**
   * Resolves at once when this run found itself holding the lease within the last `maxAgeMs`, else
   * after reading the live state (one read shared by every caller meanwhile, waiting out a NATS
   * outage); throws once another run holds the job. Checkpoint saves go by a check of the last 50 ms
   * (a fast provider's job saves hundreds of units a second, and each check reads and parses the
   * live state; a save carries this run's fence, which a later run's loads ignore, so only how soon
   * a lost lease is noticed depends on it). Provider calls go by one of the last half ack wait:
   * nobody can take the job over sooner than an ack wait after the last heartbeat that reached
   * NATS, so a run cut off from NATS stops sending calls before its job can pass to another run.
   */
  #confirmLease(maxAgeMs: number): Promise<unknown> {
    if (this.released) return Promise.reject(new HandedBackError("worker shutting down"));
    if (Date.now() - this.#confirmedAt <= maxAgeMs) return Promise.resolve();
    if (this.#leaseCheck) return this.#leaseCheck;
    const check = this.#assertLease().finally(() => {
      if (this.#leaseCheck === check) this.#leaseCheck = undefined;
    });
    this.#leaseCheck = check;
    return check;
  }

  #lose(): never {
    const error = new LeaseLostError(this.jobId);
    if (!this.controller.signal.aborted) this.controller.abort(error);
    throw error;
  }

  /** A live-state write that only lands while this run holds the job. */
  async #owned(change: (state: LiveJobState) => LiveJobState | null): Promise<UpdatedEntry | null> {
    const started = Date.now();
    let held = false;
    const written = await this.deps.infra.registry.update(this.jobId, (s) => {
      if (this.released) throw new HandedBackError("worker shutting down");
      if (!holds(s, this.identity)) this.#lose();
      held = true;
      return change(s);
    });
    if (held) this.#confirmed(started);
    return written;
  }

  #report(report: ProgressReport): Promise<void> {
    if (this.released) return Promise.reject(new HandedBackError());
    const merged: ProgressReport = { ...this.#pending };
    if (report.stage !== undefined) merged.stage = report.stage;
    if (report.progress !== undefined) merged.progress = Math.max(report.progress, this.#pending?.progress ?? 0);
    if (report.extra) merged.extra = { ...this.#pending?.extra, ...report.extra };
    this.#pending = merged;
    const stageChange = merged.stage !== undefined && merged.stage !== this.#writtenStage;
    if (stageChange || Date.now() - this.#lastWrite >= this.deps.reportIntervalMs) {
      const write = this.#flush();
      // A stage change is awaited so stage timings are exact; plain progress is fire-and-forget.
      return stageChange ? write : Promise.resolve();
    }
    return Promise.resolve();
  }

  #flush(): Promise<void> {
    this.#lastWrite = Date.now();
    this.#writes = this.#writes.then(async () => {
      const pending = this.#pending;
      if (this.released) return;
      this.#pending = undefined;
      try {
        const written = await this.#owned((s) => (isActive(s) ? applyProgress(s, pending ?? {}) : null));
        if (written) this.#writtenStage = written.state.stage;
        // The cancel mark, should this replica have missed the cancel message.
        if (written && cancelRequested(written.state)) this.cancel();
      } catch (error) {
        if (error instanceof LeaseLostError || error instanceof HandedBackError) return;
        // NATS briefly unavailable: keep the report for the next write.
        const later = this.#pending as ProgressReport | undefined; // reports that arrived during the write
        this.#pending = { ...pending, ...later, extra: { ...pending?.extra, ...later?.extra } };
        this.log.warn({ err: error }, "progress write failed; will retry");
      }
    });
    return this.#writes;
  }

  #heartbeat(): void {
    if (this.released) return;
    try {
      this.msg.working();
    } catch (error) {
      this.log.warn({ err: error }, "in-progress ack failed");
    }
    void this.#flush();
  }

  /** A non-terminal save of the running job (the spec tolerates its failure); a later terminal row supersedes it. */
  async #saveProgressRow(state: LiveJobState): Promise<void> {
    const { store } = this.deps;
    if (!store.persistent) return;
    await store.upsertJob(toStoredJob(state, null, this.identity.deliveries)).catch((error: unknown) =>
      this.log.warn({ err: error }, "could not save the running job; the live state is unaffected"),
    );
  }

  /**
   * The terminal sequence: (1) the lease is checked, (2) one pass over the results writes them into
   * the job's artifact (their only home), (3) the lease checked again, the artifact's head, (4) the
   * terminal row in the store of record (fenced by this run's delivery number), which names the
   * artifact by the job's id, (5) only then the live state turns terminal (compare-and-set, fenced),
   * (6) the project, checkpoints, input and partial chunks are cleaned up and the command acked —
   * all only if this run wrote the terminal state. Every read of the finished job streams its
   * artifact, so a store of record that cannot take the row within its budget delays only the row
   * (kept and written again by the store), never a read.
   */
  async #finish(outcome: JobOutcome, failure: ServiceError | null): Promise<void> {
    const { infra } = this.deps;
    await this.#writes;
    await this.#partials?.flush().catch(() => undefined);
    const current = await this.#assertLease();

    const finished = new Date();
    const items: ItemChunks = Array.isArray(outcome.items) ? arrayChunks(outcome.items) : (outcome.items ?? arrayChunks([]));
    const extras = outcome.result ?? {};
    const report: ProgressReport = { ...this.#pending, extra: { ...this.#pending?.extra, ...outcome.extra } };
    const terminal = (s: LiveJobState) =>
      failure ? failedState(applyProgress(s, report, finished), failure, finished, true) : completedState(s, { report, result: null, releasable: true }, finished);

    const preview = terminal(current.state);
    if (!preview) return void this.msg.ack(); // ended by someone else meanwhile
    const stored = await this.#storeTerminal(preview, items, extras);
    const final = await retrying(() => this.#owned((s) => terminal(s)), { isFinal: (e) => this.#lostLease(e) });
    if (!final?.written) return void this.msg.ack();
    recordFinished(infra.service, final.state);
    await this.#cleanUp(final.state);
    this.msg.ack();
    this.log.info({ status: final.state.status, stored }, "job finished");
  }

  /**
   * Writes the results into the job's artifact in one pass, each chunk built just before it is
   * written (retried through NATS outages like the run's other writes), then — the lease checked,
   * for a run that holds one — its head, then the terminal row: a row that says the job ended always has its artifact. True
   * when the store of record took the row; false when it did not (the store keeps it and writes it
   * again later; the artifact holds the results meanwhile).
   */
  async #storeTerminal(state: LiveJobState, items: ItemChunks, extras: JsonRecord, leased = true): Promise<boolean> {
    const { infra, store } = this.deps;
    const fence = this.identity.deliveries;
    const record = toStoredJob(state, extras, fence);
    const artifact = new ArtifactWriter(infra.data, infra.service, this.jobId, fence);
    const texts = inputTexts(infra, this.#command);
    for (let n = 0; n < items.count; n++) {
      const chunk = await items.chunk(n);
      const chunkTexts = texts && (await retrying(() => texts.of(chunk), { isFinal: (e) => this.#lostLease(e) }));
      if (artifact.push(chunk, chunkTexts)) await retrying(() => artifact.flush(), { isFinal: (e) => this.#lostLease(e) });
    }
    if (leased) await this.#assertLease();
    await retrying(() => artifact.finish(record, this.deps.prompts, store.persistent), { isFinal: (e) => this.#lostLease(e) });
    if (!store.persistent) return false;
    try {
      // The store retries a failed write for its budget, then keeps it for later.
      if ((await store.upsertJob(record, { budgetMs: this.deps.storeWaitMs ?? STORE_BUDGET_MS })) === "stale") this.#lose();
      return true;
    } catch (error) {
      if (this.#lostLease(error)) throw error;
      this.log.warn({ err: error }, "the store of record did not take the terminal row in time; it is kept for it, and the job's artifact holds the results meanwhile");
      return false;
    }
  }

  /** The job exhausted its deliveries: failed, its (empty) artifact and row written first, then live. */
  async #exhausted(): Promise<void> {
    const { infra } = this.deps;
    const finished = new Date();
    const failure = exhaustion(infra.options.maxAttempts);
    const current = await infra.registry.get(this.jobId);
    const preview = current ? failedState(current.state, failure, finished, true) : null;
    // This delivery never took the job (no lease to check): it ends it whoever ran it last.
    if (preview) await this.#storeTerminal(preview, arrayChunks([]), {}, false).catch((error: unknown) => this.log.warn({ err: error }, "could not write the exhausted job's artifact"));
    const final = await infra.registry.update(this.jobId, (s) => failedState(s, failure, finished, true));
    this.log.error({ deliveries: this.identity.deliveries }, "job exhausted its delivery attempts; marked failed");
    if (final?.written) {
      moveStatus(infra.service, current?.state.status ?? "running", "failed");
      await this.#cleanUp(final.state);
    }
    this.msg.term();
  }

  async #cleanUp({ project_id: projectId, owner }: LiveJobState): Promise<void> {
    const { infra } = this.deps;
    if (projectId) await infra.registry.releaseLock(projectId, this.jobId, owner).catch(() => undefined);
    await infra.checkpoints.purge(this.jobId).catch(() => undefined);
    if (this.#command?.input) await infra.data.deleteLines(this.#command.input);
    else await infra.data.delete(jobDataObjects.input(this.jobId));
    await this.#partials?.remove().catch(() => undefined);
  }
}

/** Job counts by status: this process moved one job from `from` to `to`. */
function moveStatus(service: string, from: string, to: string): void {
  metrics.jobsByStatus(service, from, -1);
  metrics.jobsByStatus(service, to, 1);
}

/** A run this process took (so it was `running` here) reached its terminal state. */
function recordFinished(service: string, state: LiveJobState): void {
  moveStatus(service, "running", state.status);
  if (state.duration_ms !== null && state.duration_ms !== undefined) metrics.jobDuration(service, state.duration_ms, state.status);
}
