import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DeliverPolicy } from "@nats-io/jetstream";
import { JobCheckpoint, ServiceError, type JobNames } from "@litrev/contracts";
import { safeJson } from "./safe-json";

const encoder = new TextEncoder();

/** Largest checkpoint we publish: well under NATS' default 1 MB max payload. */
export const MAX_CHECKPOINT_BYTES = 900 * 1024;

/**
 * The stage name of fence marks: a run that takes a job over publishes `<job>.<FENCE_STAGE>.<its
 * delivery number>` before it loads or saves anything. Not a stage a handler may use.
 */
export const FENCE_STAGE = "_fence";

/** Where in the stream a newer run fenced the job. */
interface FenceMark {
  fence: number;
  seq: number;
}

/**
 * Finished units of a job's work (e.g. one labelled batch of papers), appended to a stream as they
 * finish. A redelivered job loads them and skips that work, so a crash never pays the provider twice
 * for what was already done. Purged when the job ends; the stream's max age sweeps leftovers.
 *
 * Fenced: a save is a lease check followed by a publish, so a run can lose its lease in between and
 * still land one unit. Every checkpoint therefore carries its run's fence (delivery number), and a
 * run taking the job over first appends a fence mark; the stream orders both, and a load ignores a
 * checkpoint whose fence is below a mark that precedes it. What a stale run writes after the mark is
 * never read, whatever the timing (at worst its unit replaced the new run's copy of the same unit,
 * which is then done again: a cost, never a wrong result).
 */
export class CheckpointLog {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: JobNames,
  ) {}

  async save(jobId: string, stage: string, unit: string, data: unknown, fence: number): Promise<void> {
    if (stage === FENCE_STAGE) throw new ServiceError("unknown", `checkpoint stage ${FENCE_STAGE} is reserved for fence marks`);
    const record: JobCheckpoint = { version: 1, type: "job.checkpoint", job_id: jobId, stage, unit, data, fence };
    const bytes = encoder.encode(JSON.stringify(record));
    if (bytes.length > MAX_CHECKPOINT_BYTES) {
      throw new ServiceError("unknown", `checkpoint ${stage}/${unit} of job ${jobId} is ${bytes.length} bytes; split the unit (limit ${MAX_CHECKPOINT_BYTES})`);
    }
    // The fence is part of the message id: a stale run's save must not de-duplicate away the new run's save of the same unit.
    await this.js.publish(this.names.checkpointSubject(jobId, stage, safeToken(unit)), bytes, {
      msgID: `${jobId}.${stage}.${unit}.${fence}`,
    });
  }

  /**
   * Marks the job as taken by the run fenced `fence`: checkpoints of lower fences that land after
   * this mark are ignored by every later load. A run that took the job over calls this before it
   * loads or saves anything.
   */
  async fence(jobId: string, fence: number): Promise<void> {
    const record: JobCheckpoint = { version: 1, type: "job.checkpoint", job_id: jobId, stage: FENCE_STAGE, unit: String(fence), data: null, fence };
    await this.js.publish(this.names.checkpointSubject(jobId, FENCE_STAGE, String(fence)), encoder.encode(JSON.stringify(record)), {
      msgID: `${jobId}.${FENCE_STAGE}.${fence}`,
    });
  }

  /** Every saved unit of one stage (the last save of a unit wins), without those saved by a run already fenced out. */
  async load<T = unknown>(jobId: string, stage: string): Promise<Map<string, T>> {
    const marks: FenceMark[] = [];
    await this.#read(jobId, FENCE_STAGE, (record, seq) => {
      if (record.fence !== undefined) marks.push({ fence: record.fence, seq });
    });
    const out = new Map<string, T>();
    await this.#read(jobId, stage, (record, seq) => {
      const fence = record.fence;
      if (fence !== undefined && marks.some((mark) => mark.fence > fence && mark.seq < seq)) return; // saved after a newer run took over
      out.set(record.unit, record.data as T);
    });
    return out;
  }

  /**
   * Calls `each` with every checkpoint of one stage of the job, in stream order, with its sequence.
   * The consumer that reads them may sit on a replica behind the stream leader (a NATS cluster just
   * after a leader died), which would deliver fewer and make a run pay again for work already done:
   * so the leader is asked how many there are, and a read that comes up short fails (the worker's
   * load retries it with the job machinery's one retry policy).
   */
  async #read(jobId: string, stage: string, each: (record: JobCheckpoint, seq: number) => void): Promise<void> {
    const filter = this.names.checkpointStageSubjects(jobId, stage);
    const held = await this.#held(filter);
    if (held === 0) return;
    const { delivered, records } = await this.#consume(filter);
    if (delivered < held) throw new Error(`read ${delivered} of the ${held} checkpoints of job ${jobId} (${stage}) that the stream holds`);
    for (const { record, seq } of records) each(record, seq);
  }

  /** How many checkpoint subjects matching `filter` the stream leader holds (one message each). */
  async #held(filter: string): Promise<number> {
    const info = await this.jsm.streams.info(this.names.checkpointStream, { subjects_filter: filter });
    return Object.keys(info.state.subjects ?? {}).length;
  }

  /** Every message on `filter` that one ordered consumer delivers (checkpoints, and whatever else was published there). */
  async #consume(filter: string): Promise<{ delivered: number; records: { record: JobCheckpoint; seq: number }[] }> {
    const consumer = await this.js.consumers.get(this.names.checkpointStream, { filter_subjects: filter, deliver_policy: DeliverPolicy.All });
    const records: { record: JobCheckpoint; seq: number }[] = [];
    let delivered = 0;
    const info = await consumer.info(true);
    if (info.num_pending === 0) {
      await consumer.delete().catch(() => undefined);
      return { delivered, records };
    }
    const messages = await consumer.consume({ max_messages: 512 });
    try {
      for await (const msg of messages) {
        delivered++;
        // Anything that is not a checkpoint (e.g. garbage published on the subject) is skipped.
        const parsed = JobCheckpoint.safeParse(safeJson(msg));
        if (parsed.success) records.push({ record: parsed.data, seq: msg.seq });
        if (msg.info.pending === 0) break;
      }
    } finally {
      await messages.close().catch(() => undefined);
      await consumer.delete().catch(() => undefined);
    }
    return { delivered, records };
  }

  async purge(jobId: string): Promise<void> {
    await this.jsm.streams.purge(this.names.checkpointStream, { filter: this.names.checkpointJobSubjects(jobId) });
  }
}


/** Subject tokens cannot hold dots, spaces or wildcards. */
function safeToken(unit: string): string {
  return unit.replace(/[^A-Za-z0-9_-]/g, "_");
}
