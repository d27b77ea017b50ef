import type { Consumer, JsMsg } from "@nats-io/jetstream";
import { jobDataObjects, JobCommand, ServiceError, type JobRunCommand, type LiveJobState } from "@litrev/contracts";
import { metrics, type Logger } from "@litrev/telemetry";
import type { JobInfra } from "./infra";
import type { KeySealer } from "./key-sealer";
import type { LiveEntry } from "./registry";
import { applyProgress, closeStage, durationMs, isActive, type ProgressReport } from "./state";
import { toStoredJob, type JobStore, type JsonRecord } from "./store/job-store";

/** What a handler returns: per-item results (stored apart), small result extras, and live extras. */
export interface JobOutcome {
  items?: JsonRecord[];
  result?: JsonRecord;
  extra?: JsonRecord;
}

/** Everything a handler gets for one run of one job. */
export interface JobContext {
  readonly jobId: string;
  /** The live state when this run took the job. */
  readonly state: LiveJobState;
  readonly params: JsonRecord;
  /** Deliveries that ended in a crash so far, plus this one (1 on a first run). */
  readonly attempt: number;
  /** Aborted on graceful shutdown (the job is handed to another replica) or when the lease is lost. */
  readonly signal: AbortSignal;
  /** The client's provider key, unsealed; undefined means "use the server's key". */
  readonly providerKey: string | undefined;
  readonly logger: Logger;
  input<T = unknown>(): Promise<T>;
  /** Progress (never backwards), stage changes (timed), live extras. Throttled; a stage change is written at once. */
  report(report: ProgressReport): Promise<void>;
  readonly checkpoints: {
    load<T = unknown>(stage: string): Promise<Map<string, T>>;
    save(stage: string, unit: string, data: unknown): Promise<void>;
  };
}

export type JobHandler = (ctx: JobContext) => Promise<JobOutcome>;

export interface JobWorkerOptions {
  infra: JobInfra;
  store: JobStore;
  sealer: KeySealer;
  logger: Logger;
  /** This process's instance id (recorded as the job's worker). */
  instance: string;
  handler: JobHandler;
  /** Jobs run at once by this process (default 2). */
  concurrency?: number;
  /** Minimum interval between progress writes (default 250 ms). */
  reportIntervalMs?: number;
}

/** The run no longer owns the job: another replica took it over after this one stalled. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(jobId: string) {
    super(`job ${jobId} was taken over by another worker`);
  }
}

class HandedBackError extends Error {
  override readonly name = "HandedBackError";
}

interface Run {
  jobId: string;
  msg: JsMsg;
  attempt: number;
  deliveries: number;
  controller: AbortController;
  /** Set once the job was handed back on shutdown: nothing more may be written or acked. */
  released: boolean;
  /** Set once the handler returned or threw: the run ends on its own, shutdown leaves it be. */
  finishing: boolean;
  pending: ProgressReport | undefined;
  writtenStage: string;
  lastWrite: number;
  writes: Promise<void>;
  done: Promise<void>;
}

/**
 * Pulls one service's job commands from its durable consumer and runs them with bounded
 * concurrency. See README.md for the lifecycle rules (heartbeats, hand-back on shutdown, attempts,
 * leases, terminal writes before the ack).
 */
export class JobWorker {
  readonly #o: Required<Omit<JobWorkerOptions, "concurrency" | "reportIntervalMs">> & { concurrency: number; reportIntervalMs: number };
  readonly #runs = new Map<string, Run>();
  #stopping = false;
  #loop: Promise<void> | undefined;
  #stopQueueGauge: (() => void) | undefined;
  #slotFreed: (() => void) | undefined;

  constructor(options: JobWorkerOptions) {
    this.#o = { ...options, concurrency: options.concurrency ?? 2, reportIntervalMs: options.reportIntervalMs ?? 250 };
  }

  /** Jobs this process is running right now. */
  get running(): string[] {
    return [...this.#runs.keys()];
  }

  start(): void {
    const { infra } = this.#o;
    this.#stopQueueGauge ??= metrics.queueDepth(infra.service, async () =>
      (await infra.jsm.consumers.info(infra.names.commandStream, infra.names.consumer)).num_pending,
    );
    this.#loop ??= this.#pull();
  }

  /**
   * Graceful stop: no new pulls; every running job is aborted, marked as handed back and `nak`ed at
   * once, so another replica resumes it immediately (from its checkpoints) instead of after the ack wait.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#stopQueueGauge?.();
    this.#slotFreed?.();
    const runs = [...this.#runs.values()];
    await Promise.all(runs.map((run) => this.#handBack(run)));
    // The open pull request ends within its expiry; a command it still brings is handed back too.
    await Promise.race([Promise.allSettled([this.#loop, ...runs.map((run) => run.done)]), sleep(PULL_EXPIRES_MS + 1_000)]);
  }

  async #pull(): Promise<void> {
    const { infra, logger } = this.#o;
    let consumer: Consumer | undefined;
    while (!this.#stopping) {
      try {
        consumer ??= await infra.js.consumers.get(infra.names.commandStream, infra.names.consumer);
        await this.#waitForSlot();
        if (this.#stopping) break;
        const msg = await consumer.next({ expires: PULL_EXPIRES_MS });
        if (!msg) continue;
        if (this.#stopping) {
          await this.#handBackUnstarted(msg);
          break;
        }
        this.#begin(msg);
      } catch (error) {
        if (this.#stopping) break;
        logger.warn({ err: error }, "pulling job commands failed; retrying");
        await sleep(1_000);
      }
    }
  }

  async #waitForSlot(): Promise<void> {
    while (this.#runs.size >= this.#o.concurrency && !this.#stopping) {
      await new Promise<void>((resolve) => (this.#slotFreed = resolve));
    }
  }

  #begin(msg: JsMsg): void {
    const { logger } = this.#o;
    let command: JobRunCommand;
    try {
      command = JobCommand.parse(msg.json());
    } catch (error) {
      logger.error({ err: error, subject: msg.subject, seq: msg.seq }, "malformed job command discarded");
      msg.term();
      return;
    }
    if (this.#runs.has(command.job_id)) {
      // Redelivered while still running here (a long stall): the run in progress will ack it.
      return;
    }
    const run: Run = {
      jobId: command.job_id,
      msg,
      attempt: 0,
      deliveries: msg.info.deliveryCount,
      controller: new AbortController(),
      released: false,
      finishing: false,
      pending: undefined,
      writtenStage: "",
      lastWrite: 0,
      writes: Promise.resolve(),
      done: Promise.resolve(),
    };
    this.#runs.set(run.jobId, run);
    run.done = this.#execute(run, command)
      .catch((error: unknown) => logger.error({ err: error, job_id: run.jobId }, "job bookkeeping failed"))
      .finally(() => {
        this.#runs.delete(run.jobId);
        this.#slotFreed?.();
      });
  }

  async #execute(run: Run, command: JobRunCommand): Promise<void> {
    const { infra, logger, instance, sealer } = this.#o;
    const log = logger.child({ job_id: run.jobId, delivery: run.deliveries });
    const entry = await retrying(() => infra.registry.get(run.jobId), run.controller.signal);
    if (!entry) {
      log.warn("job command has no live state (expired or removed); discarded");
      run.msg.term();
      return;
    }
    if (!isActive(entry.state)) {
      run.msg.ack(); // finished before an earlier delivery could ack
      return;
    }
    run.attempt = run.deliveries - entry.state.handoffs;
    if (run.attempt > infra.options.maxAttempts) {
      await this.#exhausted(run, entry);
      run.msg.term();
      return;
    }

    const now = new Date().toISOString();
    const taken = await infra.registry.update(run.jobId, (s) =>
      isActive(s)
        ? { ...s, status: "running", started_at: s.started_at ?? now, heartbeat_at: now, attempt: run.deliveries, worker: instance }
        : null,
    );
    if (!taken || !isActive(taken.state)) {
      run.msg.ack();
      return;
    }
    run.writtenStage = taken.state.stage;
    if (entry.state.status !== "running") moveStatus(infra.service, entry.state.status, "running");
    this.#save(toStoredJob(taken.state), log);
    log.info({ attempt: run.attempt, resumed: run.deliveries > 1 }, "job started");

    const heartbeat = setInterval(() => this.#heartbeat(run, log), Math.max(200, Math.floor(infra.options.ackWaitMs / 3)));
    try {
      const providerKey = command.sealed_provider_key ? sealer.open(command.sealed_provider_key) : undefined;
      let input: Promise<unknown> | undefined;
      const ctx: JobContext = {
        jobId: run.jobId,
        state: taken.state,
        params: command.params,
        attempt: run.attempt,
        signal: run.controller.signal,
        providerKey,
        logger: log,
        // Reads and checkpoint saves ride out a NATS restart like the worker's own writes do.
        input: <T>() => {
          input ??= retrying(() => loadInput(infra, command), run.controller.signal);
          return input as Promise<T>;
        },
        report: (report) => this.#report(run, report, log),
        checkpoints: {
          load: <T>(stage: string) => retrying(() => infra.checkpoints.load<T>(run.jobId, stage), run.controller.signal),
          save: async (stage, unit, data) => {
            if (run.released) throw new HandedBackError();
            // Safe to repeat: a checkpoint's message id de-duplicates a save that landed before its ack was lost.
            await retrying(() => infra.checkpoints.save(run.jobId, stage, unit, data), run.controller.signal);
          },
        },
      };
      const outcome = await this.#o.handler(ctx);
      if (run.released) return;
      run.finishing = true;
      await this.#complete(run, outcome, log);
      run.msg.ack();
      log.info("job completed");
    } catch (error) {
      if (run.released) return;
      run.finishing = true;
      if (error instanceof LeaseLostError || run.controller.signal.reason instanceof LeaseLostError) {
        log.warn("job taken over by another worker; this run stops without touching it");
        return;
      }
      const failure = ServiceError.from(error);
      if (failure.category === "unknown") log.error({ err: error }, "job failed unexpectedly");
      else log.warn({ category: failure.category }, `job failed: ${failure.message}`);
      await this.#fail(run, failure, log);
      run.msg.ack();
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** A write that only lands while this run still owns the job. */
  async #owned(run: Run, change: (state: LiveJobState) => LiveJobState | null): Promise<LiveEntry | null> {
    const { infra, instance } = this.#o;
    return infra.registry.update(run.jobId, (s) => {
      if (run.released) throw new HandedBackError("worker shutting down");
      if (s.attempt !== run.deliveries || s.worker !== instance) throw new LeaseLostError(run.jobId);
      return change(s);
    });
  }

  #report(run: Run, report: ProgressReport, log: Logger): Promise<void> {
    if (run.released) return Promise.reject(new HandedBackError());
    const merged: ProgressReport = { ...run.pending };
    if (report.stage !== undefined) merged.stage = report.stage;
    if (report.progress !== undefined) merged.progress = Math.max(report.progress, run.pending?.progress ?? 0);
    if (report.extra) merged.extra = { ...run.pending?.extra, ...report.extra };
    run.pending = merged;
    const stageChange = merged.stage !== undefined && merged.stage !== run.writtenStage;
    if (stageChange || Date.now() - run.lastWrite >= this.#o.reportIntervalMs) {
      const write = this.#flush(run, log);
      // A stage change is awaited so stage timings are exact; plain progress is fire-and-forget.
      return stageChange ? write : Promise.resolve();
    }
    return Promise.resolve();
  }

  #flush(run: Run, log: Logger): Promise<void> {
    run.lastWrite = Date.now();
    run.writes = run.writes.then(async () => {
      const pending = run.pending;
      if (run.released) return;
      run.pending = undefined;
      try {
        const written = await this.#owned(run, (s) => (isActive(s) ? applyProgress(s, pending ?? {}) : null));
        if (written) run.writtenStage = written.state.stage;
      } catch (error) {
        if (error instanceof LeaseLostError) {
          run.controller.abort(error);
          return;
        }
        // NATS briefly unavailable: keep the report for the next write.
        const later = run.pending as ProgressReport | undefined; // reports that arrived during the write
        run.pending = { ...pending, ...later, extra: { ...pending?.extra, ...later?.extra } };
        log.warn({ err: error }, "progress write failed; will retry");
      }
    });
    return run.writes;
  }

  #heartbeat(run: Run, log: Logger): void {
    if (run.released) return;
    try {
      run.msg.working();
    } catch (error) {
      log.warn({ err: error }, "in-progress ack failed");
    }
    void this.#flush(run, log);
  }

  async #complete(run: Run, outcome: JobOutcome, log: Logger): Promise<void> {
    const { infra, store } = this.#o;
    await run.writes;
    const items = outcome.items ?? [];
    const result = outcome.result ?? {};
    const ref = await retrying(() => infra.data.putJson(jobDataObjects.result(run.jobId), { items, result }), undefined);
    if (store.persistent) {
      await store.replaceItems(run.jobId, items).catch((error: unknown) => log.warn({ err: error }, "could not save the job's items"));
    }
    const finished = new Date();
    const final = await retrying(
      () =>
        this.#owned(run, (s) => {
          const withExtras = applyProgress(s, { ...run.pending, extra: { ...run.pending?.extra, ...outcome.extra } }, finished);
          return {
            ...withExtras,
            status: "completed",
            progress: 1,
            stage: "Complete",
            stage_timings: closeStage(withExtras, finished),
            stage_started_at: null,
            completed_at: finished.toISOString(),
            duration_ms: durationMs(s.started_at ?? s.created_at, finished),
            heartbeat_at: finished.toISOString(),
            result: ref,
          };
        }),
      undefined,
    );
    if (final) {
      this.#save(toStoredJob(final.state, result), log);
      recordFinished(infra.service, final.state);
    }
    await this.#cleanUp(run.jobId, final?.state.project_id ?? null);
  }

  async #fail(run: Run, failure: ServiceError, log: Logger): Promise<void> {
    await run.writes;
    const finished = new Date();
    const final = await retrying(
      () =>
        this.#owned(run, (s) =>
          isActive(s)
            ? {
                ...s,
                status: "failed",
                error: failure.message,
                error_category: failure.category,
                error_retryable: failure.retryable,
                stage_timings: closeStage(s, finished),
                stage_started_at: null,
                completed_at: finished.toISOString(),
                duration_ms: durationMs(s.started_at ?? s.created_at, finished),
                heartbeat_at: finished.toISOString(),
              }
            : null,
        ),
      undefined,
    ).catch((error: unknown) => {
      if (error instanceof LeaseLostError) return null;
      throw error;
    });
    if (final) {
      this.#save(toStoredJob(final.state), log);
      recordFinished(this.#o.infra.service, final.state);
    }
    await this.#cleanUp(run.jobId, final?.state.project_id ?? null);
  }

  async #exhausted(run: Run, entry: LiveEntry): Promise<void> {
    const { infra, logger } = this.#o;
    const finished = new Date();
    const limit = infra.options.maxAttempts;
    const final = await infra.registry.update(run.jobId, (s) =>
      isActive(s)
        ? {
            ...s,
            status: "failed",
            error: `The job was abandoned: its worker stopped or crashed on each of ${limit} delivery attempts (limit ${limit})`,
            error_category: "unknown",
            error_retryable: false,
            stage_timings: closeStage(s, finished),
            stage_started_at: null,
            completed_at: finished.toISOString(),
            duration_ms: durationMs(s.started_at ?? s.created_at, finished),
          }
        : null,
    );
    logger.error({ job_id: run.jobId, deliveries: run.deliveries }, "job exhausted its delivery attempts; marked failed");
    if (final) {
      this.#save(toStoredJob(final.state), logger);
      moveStatus(infra.service, entry.state.status, "failed");
    }
    await this.#cleanUp(run.jobId, entry.state.project_id);
  }

  async #cleanUp(jobId: string, projectId: number | null): Promise<void> {
    const { infra } = this.#o;
    if (projectId) await infra.registry.releaseLock(projectId, jobId).catch(() => undefined);
    await infra.checkpoints.purge(jobId).catch(() => undefined);
    await infra.data.delete(jobDataObjects.input(jobId));
  }

  async #handBack(run: Run): Promise<void> {
    if (run.released || run.finishing) return;
    run.released = true;
    run.controller.abort(new HandedBackError("worker shutting down"));
    const { infra, instance } = this.#o;
    try {
      await infra.registry.update(run.jobId, (s) =>
        s.attempt === run.deliveries && s.worker === instance && isActive(s) ? { ...s, handoffs: s.handoffs + 1, worker: null } : null,
      );
    } catch (error) {
      this.#o.logger.warn({ err: error, job_id: run.jobId }, "could not record the hand-back");
    }
    run.msg.nak();
    this.#o.logger.info({ job_id: run.jobId }, "job handed back for another worker");
  }

  /** A command that arrived while stopping: returned at once, and not counted as a crash. */
  async #handBackUnstarted(msg: JsMsg): Promise<void> {
    const parsed = JobCommand.safeParse(safeJson(msg));
    if (parsed.success) {
      await this.#o.infra.registry
        .update(parsed.data.job_id, (s) => (isActive(s) ? { ...s, handoffs: s.handoffs + 1 } : null))
        .catch(() => undefined);
    }
    msg.nak();
  }

  /** The system-of-record write: a failure is logged and never changes the live state (spec). */
  #save(job: ReturnType<typeof toStoredJob>, log: Logger): void {
    if (!this.#o.store.persistent) return;
    this.#o.store.upsertJob(job).catch((error: unknown) => log.warn({ err: error }, "could not save the job; the live state is unaffected"));
  }
}

async function loadInput(infra: JobInfra, command: JobRunCommand): Promise<unknown> {
  if (!command.input) return null;
  const value = await infra.data.getJson(command.input.object);
  if (value === null) throw new ServiceError("unknown", "The job's input is no longer available (it expired or was removed)");
  return value;
}

/**
 * Retries a NATS operation through a brief outage (reconnects take a few seconds). A ServiceError
 * that is not retryable (e.g. an input that no longer exists) is final at once.
 */
async function retrying<T>(operation: () => Promise<T>, signal: AbortSignal | undefined, budgetMs = 60_000): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let delay = 200; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await operation();
    } catch (error) {
      const final = error instanceof LeaseLostError || (error instanceof ServiceError && !error.retryable);
      if (final || Date.now() + delay > deadline || signal?.aborted) throw error;
      await sleep(delay);
    }
  }
}

// Short, so a stopping worker's last open pull ends soon (stop() waits for it; see handBackUnstarted).
const PULL_EXPIRES_MS = 1_500;

function safeJson(msg: JsMsg): unknown {
  try {
    return msg.json();
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());

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
