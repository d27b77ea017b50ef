import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DeliverPolicy } from "@nats-io/jetstream";
import { JobCheckpoint, ServiceError, type JobNames } from "@litrev/contracts";
import { safeJson } from "./safe-json";

const encoder = new TextEncoder();

/** Largest checkpoint we publish: well under NATS' default 1 MB max payload. */
export const MAX_CHECKPOINT_BYTES = 900 * 1024;

/**
 * Finished units of a job's work (e.g. one labelled batch of papers), appended to a stream as they
 * finish. A redelivered job loads them and skips that work, so a crash never pays the provider twice
 * for what was already done. Purged when the job ends; the stream's max age sweeps leftovers.
 */
export class CheckpointLog {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: JobNames,
  ) {}

  async save(jobId: string, stage: string, unit: string, data: unknown): Promise<void> {
    const record: JobCheckpoint = { version: 1, type: "job.checkpoint", job_id: jobId, stage, unit, data };
    const bytes = encoder.encode(JSON.stringify(record));
    if (bytes.length > MAX_CHECKPOINT_BYTES) {
      throw new ServiceError("unknown", `checkpoint ${stage}/${unit} of job ${jobId} is ${bytes.length} bytes; split the unit (limit ${MAX_CHECKPOINT_BYTES})`);
    }
    await this.js.publish(this.names.checkpointSubject(jobId, stage, safeToken(unit)), bytes, {
      msgID: `${jobId}.${stage}.${unit}`,
    });
  }

  /** Every saved unit of one stage (the last save of a unit wins). */
  async load<T = unknown>(jobId: string, stage: string): Promise<Map<string, T>> {
    const out = new Map<string, T>();
    const consumer = await this.js.consumers.get(this.names.checkpointStream, {
      filter_subjects: this.names.checkpointStageSubjects(jobId, stage),
      deliver_policy: DeliverPolicy.All,
    });
    const info = await consumer.info(true);
    let remaining = info.num_pending;
    if (remaining === 0) {
      await consumer.delete().catch(() => undefined);
      return out;
    }
    const messages = await consumer.consume({ max_messages: 512 });
    try {
      for await (const msg of messages) {
        // Anything that is not a checkpoint (e.g. garbage published on the subject) is skipped.
        const parsed = JobCheckpoint.safeParse(safeJson(msg));
        if (parsed.success) out.set(parsed.data.unit, parsed.data.data as T);
        remaining = msg.info.pending;
        if (remaining === 0) break;
      }
    } finally {
      await messages.close().catch(() => undefined);
      await consumer.delete().catch(() => undefined);
    }
    return out;
  }

  async purge(jobId: string): Promise<void> {
    await this.jsm.streams.purge(this.names.checkpointStream, { filter: this.names.checkpointJobSubjects(jobId) });
  }
}


/** Subject tokens cannot hold dots, spaces or wildcards. */
function safeToken(unit: string): string {
  return unit.replace(/[^A-Za-z0-9_-]/g, "_");
}
