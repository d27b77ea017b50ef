import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { JobRunCommand, type JobNames } from "@litrev/contracts";
import { isNotFound } from "./nats-errors";

const encoder = new TextEncoder();

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
    await this.js.publish(this.names.commandSubject(parsed.job_id), encoder.encode(JSON.stringify(parsed)), {
      msgID: parsed.job_id,
    });
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
