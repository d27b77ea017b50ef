import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { JobRunCommand, type JobNames } from "@litrev/contracts";
import { isConnectionClosed, isNotFound } from "./nats-errors";
import { retrying } from "./retry";

const encoder = new TextEncoder();
/** How long a submit keeps trying through an outage before its admission fails (and says so). */
const SUBMIT_BUDGET_MS = 10_000;

/** The work queue of one service's job commands. */
export class JobQueue {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly names: JobNames,
  ) {}

  /**
   * Publishes a job command, de-duplicated by job id (`Nats-Msg-Id`): a retried admission within
   * the stream's duplicate window cannot queue the same job twice.
   */
  async submit(command: JobRunCommand): Promise<void> {
    const parsed = JobRunCommand.parse(command);
    // The message id makes a repeat harmless (de-duplicated by the stream): sent again through a
    // brief outage or a stream leader election instead of failing the job it would have run.
    await retrying(
      () => this.js.publish(this.names.commandSubject(parsed.job_id), encoder.encode(JSON.stringify(parsed)), { msgID: parsed.job_id }),
      { budgetMs: SUBMIT_BUDGET_MS, isFinal: isConnectionClosed },
    );
  }

  /** Whether the job's command is still in the work queue (waiting, or delivered and not yet acked). */
  async isQueued(jobId: string): Promise<boolean> {
    try {
      const msg = await this.jsm.streams.getMessage(this.names.commandStream, { last_by_subj: this.names.commandSubject(jobId) });
      return msg !== null;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /** Drops a job's command from the queue (maintenance and tests). */
  async discard(jobId: string): Promise<void> {
    await this.jsm.streams.purge(this.names.commandStream, { filter: this.names.commandSubject(jobId) });
  }
}
