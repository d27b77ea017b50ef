import { DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { JobNames } from "@litrev/contracts";
import { keepStreamLimits } from "@litrev/messaging";
import { isStreamOrMessageNotFound } from "./jetstream-codes";
import type { StoredJob } from "./job-store";

/** How far before a job's creation time its listing entry may sit (replicas' clocks differ). */
const INDEX_CLOCK_SLACK_MS = 10 * 60 * 1000;

const decoder = new TextDecoder();

interface IndexEntry {
  job_id: string;
  created_at: string;
  /** The job's owner (absent on entries from before owners: the default owner's). */
  owner?: string | undefined;
}

/**
 * The embedded store's creation index (`EmbeddedJobStore`): stream `LITREV_STORE_INDEX_<SVC>`, one
 * entry per job, appended before its first row write; listings read it backwards by sequence.
 */
export class CreationIndex {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly names: JobNames,
  ) {}

  /** Nats-Msg-Id = job id: a racing first write is de-duplicated. */
  async add(row: StoredJob): Promise<void> {
    const entry: IndexEntry = { job_id: row.job_id, created_at: row.created_at, ...(row.owner ? { owner: row.owner } : {}) };
    await this.js.publish(this.names.storeIndexSubject, JSON.stringify(entry), { msgID: row.job_id });
  }

  /**
   * One index entry by sequence: any replica may answer (an entry never changes), but only the
   * leader may say it is gone, since a replica behind it does not hold the newest entries yet.
   */
  async entry(seq: number): Promise<StoredMsg | null> {
    const entry = await this.jsm.direct.getMessage(this.names.storeIndexStream, { seq });
    if (entry) return entry;
    return this.jsm.streams
      .getMessage(this.names.storeIndexStream, { seq })
      .catch((error: unknown) => (isStreamOrMessageNotFound(error) ? null : Promise.reject(error)));
  }

  /**
   * Deletes the job's listing entry: read from a little before the job's creation onwards (the
   * entry was published at its first row write), so the scan costs the jobs created since, not all.
   */
  async remove(jobId: string, createdAt: string): Promise<void> {
    const from = new Date(Math.max(0, Date.parse(createdAt) - INDEX_CLOCK_SLACK_MS) || 0).toISOString();
    const consumer = await this.js.consumers.get(this.names.storeIndexStream, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from });
    try {
      // Entries are published once per job (de-duplicated by id): the scan ends at the first match.
      let remaining = (await consumer.info()).num_pending;
      while (remaining > 0) {
        const batch = await consumer.fetch({ max_messages: Math.min(256, remaining), expires: 5_000 });
        let read = 0;
        for await (const message of batch) {
          read++;
          if (parseIndexEntry(message.data)?.job_id !== jobId) continue;
          await this.jsm.streams.deleteMessage(this.names.storeIndexStream, message.seq, false);
          return;
        }
        if (read === 0) return;
        remaining -= read;
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
  }
}

export function parseIndexEntry(data: Uint8Array): IndexEntry | null {
  try {
    const value = JSON.parse(decoder.decode(data)) as Partial<IndexEntry>;
    return typeof value.job_id === "string" ? (value as IndexEntry) : null;
  } catch {
    return null;
  }
}

/** Creates the index stream, or keeps an existing one's retention and size in line with ours. */
export async function ensureIndexStream(jsm: JetStreamManager, names: JobNames, retentionMs: number, replicas: number, maxBytes: number): Promise<void> {
  const config = {
    name: names.storeIndexStream,
    subjects: [names.storeIndexSubject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    // Full: the oldest index entries go (those jobs drop out of listings before their rows expire).
    discard: DiscardPolicy.Old,
    max_age: nanos(retentionMs),
    max_bytes: maxBytes,
    duplicate_window: nanos(Math.min(2 * 60 * 1000, retentionMs)),
    allow_direct: true,
  };
  try {
    await jsm.streams.add(config);
  } catch (error) {
    // Exists already (another replica, an earlier run): keep its retention and size in line with ours.
    await jsm.streams.info(config.name).catch((infoError: unknown) => {
      throw isStreamOrMessageNotFound(infoError) ? error : infoError;
    });
    await keepStreamLimits(jsm, config.name, { max_age: config.max_age, max_bytes: maxBytes });
  }
}
