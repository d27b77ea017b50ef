import { setTimeout as sleep } from "node:timers/promises";
import type { Consumer, JsMsg } from "@nats-io/jetstream";
import type { Subscription } from "@nats-io/transport-node";
import { JobCommand, subjects } from "@litrev/contracts";
import { metrics } from "@litrev/telemetry";
import { isActive } from "../state";
import { JobRun } from "./job-run";
import type { JobWorkerOptions } from "./types";
import { safeJson } from "../safe-json";

// Short, so a stopping worker's last open pull ends soon (stop() waits for it; see handBackUnstarted).
const PULL_EXPIRES_MS = 1_500;

/**
 * Pulls one service's job commands from its durable consumer and runs each delivery as a JobRun,
 * at most `concurrency` at once. See libs/jobs/README.md for the lifecycle rules.
 */
export class JobWorker {
  readonly #runs = new Map<string, { run: JobRun; done: Promise<void> }>();
  readonly #concurrency: number;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #stopQueueGauge: (() => void) | undefined;
  #slotFreed: (() => void) | undefined;
  #cancels: Subscription | undefined;

  constructor(private readonly options: JobWorkerOptions) {
    this.#concurrency = options.concurrency ?? 2;
  }

  /** Jobs this process is running right now. */
  get running(): string[] {
    return [...this.#runs.keys()];
  }

  start(): void {
    const { infra } = this.options;
    this.#stopQueueGauge ??= metrics.queueDepth(infra.service, async () =>
      (await infra.jsm.consumers.info(infra.names.commandStream, infra.names.consumer)).num_pending,
    );
    // Every replica hears every cancel (no queue group): the one running the job stops it.
    this.#cancels ??= infra.nc.subscribe(subjects.jobCancel(infra.service), {
      callback: (error, msg) => {
        if (error) return;
        const jobId = (safeJson(msg) as { job_id?: unknown } | undefined)?.job_id;
        if (typeof jobId === "string") this.#runs.get(jobId)?.run.cancel();
      },
    });
    this.#loop ??= this.#pull();
  }

  /**
   * Graceful stop: no new pulls; every running job is aborted, marked as handed back and `nak`ed at
   * once, so another replica resumes it immediately (from its checkpoints) instead of after the ack wait.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#stopQueueGauge?.();
    this.#cancels?.unsubscribe();
    this.#slotFreed?.();
    const runs = [...this.#runs.values()];
    await Promise.all(runs.map(({ run }) => run.handBack()));
    // The open pull request ends within its expiry; a command it still brings is handed back too.
    await Promise.race([Promise.allSettled([this.#loop, ...runs.map((r) => r.done)]), sleep(PULL_EXPIRES_MS + 1_000)]);
  }

  async #pull(): Promise<void> {
    const { infra, logger } = this.options;
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
    while (this.#runs.size >= this.#concurrency && !this.#stopping) {
      await new Promise<void>((resolve) => (this.#slotFreed = resolve));
    }
  }

  #begin(msg: JsMsg): void {
    const { logger } = this.options;
    const parsed = JobCommand.safeParse(safeJson(msg));
    if (!parsed.success) {
      logger.error({ subject: msg.subject, seq: msg.seq }, "malformed job command discarded");
      msg.term();
      return;
    }
    const command = parsed.data;
    // Redelivered while still running here (a long stall): the run in progress acks it.
    if (this.#runs.has(command.job_id)) return;
    const run = new JobRun({ ...this.options, reportIntervalMs: this.options.reportIntervalMs ?? 250 }, command.job_id, msg);
    const done = run
      .execute(command)
      .catch((error: unknown) => logger.error({ err: error, job_id: run.jobId }, "job bookkeeping failed"))
      .finally(() => {
        this.#runs.delete(run.jobId);
        this.#slotFreed?.();
      });
    this.#runs.set(run.jobId, { run, done });
  }

  /** A command that arrived while stopping: returned at once, and not counted as a crash. */
  async #handBackUnstarted(msg: JsMsg): Promise<void> {
    const parsed = JobCommand.safeParse(safeJson(msg));
    if (parsed.success) {
      await this.options.infra.registry
        .update(parsed.data.job_id, (s) => (isActive(s) ? { ...s, handoffs: s.handoffs + 1 } : null))
        .catch(() => undefined);
    }
    msg.nak();
  }
}
