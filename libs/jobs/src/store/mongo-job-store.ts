import { MongoClient, MongoServerError, type AnyBulkWriteOperation, type Collection, type Db, type Filter } from "mongodb";
import { DEFAULT_JOB_OWNER } from "@litrev/contracts";
import { finiteOrNull } from "../finite";
import { checkFence, isActiveStatus, type JobStore, type JsonRecord, type StoredJob, type UpsertOutcome } from "./job-store";


export interface MongoJobStoreOptions {
  url: string;
  /** Collection names, e.g. `screening_jobs` and `screening_results`. */
  jobs: string;
  items: string;
  /** Database name; by default the one in the URL (else `litrev`). */
  database?: string;
  /** Start-up budget: without a server, the driver would otherwise wait 30 s. */
  serverSelectionTimeoutMS?: number;
}

interface ItemDoc {
  job_id: string;
  fence: number;
  seq: number;
  data: JsonRecord;
}

const ITEM_BATCH = 1_000;
const DUPLICATE_KEY = 11000;
const INDEX_NOT_FOUND = 27;
const NAMESPACE_NOT_FOUND = 26;
const ACTIVE = ["pending", "running"];

/**
 * The system of record in MongoDB: one document per job (unique index on `job_id`) and one document
 * per item in a separate collection keyed by `(job_id, fence, seq)`, so a 20,000-paper job is
 * 20,000 small documents rather than one near the 16 MB limit. NaN/±∞ are stored as null.
 *
 * The fencing rule is one conditional replace: the filter matches the job's row only when the rule
 * accepts the write; with `upsert`, a write that matches nothing inserts — which fails with a
 * duplicate key when a row exists that refused it (or that a concurrent first write just created;
 * the write is then decided once more against that row).
 */
export class MongoJobStore implements JobStore {
  readonly kind = "mongodb";
  readonly persistent = true;
  #lastError: string | undefined;

  private constructor(
    private readonly client: MongoClient,
    private readonly jobs: Collection<StoredJob>,
    private readonly items: Collection<ItemDoc>,
  ) {}

  static async connect(options: MongoJobStoreOptions): Promise<MongoJobStore> {
    const client = new MongoClient(options.url, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 3_000,
      appName: "litrev-jobs",
    });
    try {
      await client.connect();
      const db: Db = options.database ? client.db(options.database) : client.db(undefined);
      const jobs = db.collection<StoredJob>(options.jobs);
      const items = db.collection<ItemDoc>(options.items);
      await migrateUnfenced(jobs, items);
      await Promise.all([
        jobs.createIndex({ job_id: 1 }, { unique: true }),
        jobs.createIndex({ created_at: -1 }),
        jobs.createIndex({ owner: 1, created_at: -1 }),
        jobs.createIndex({ project_id: 1, status: 1 }),
        items.createIndex({ job_id: 1, fence: 1, seq: 1 }, { unique: true }),
      ]);
      return new MongoJobStore(client, jobs, items);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
  }

  status(): string {
    return this.#lastError ? `error: ${this.#lastError}` : "ok";
  }

  describe(): string {
    return "mongodb";
  }

  async upsertJob(job: StoredJob): Promise<UpsertOutcome> {
    checkFence(job.fence);
    const doc = finiteOrNull(job);
    // Matches the row only if the fencing rule accepts this write (job-store.ts `accepts`).
    const sameFence = isActiveStatus(job.status) ? { fence: job.fence, status: { $in: ACTIVE } } : { fence: job.fence };
    const filter = { job_id: job.job_id, $or: [{ fence: { $lt: job.fence } }, sameFence] } as Filter<StoredJob>;
    return this.#track(async () => {
      try {
        await this.jobs.replaceOne(filter, doc, { upsert: true });
        return "written";
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      }
      // A row exists that the filter did not match: it refused the write, or it is a concurrent
      // first write that won the insert. Decide against it once more (rows are never deleted).
      const again = await this.jobs.replaceOne(filter, doc, { upsert: false });
      return again.matchedCount === 1 ? "written" : "stale";
    });
  }

  async getJob(jobId: string): Promise<StoredJob | null> {
    return this.#track(() => this.jobs.findOne({ job_id: jobId }, { projection: { _id: 0 } }));
  }

  async listJobs(limit: number, owner?: string): Promise<StoredJob[]> {
    const want = Math.max(0, Math.floor(limit));
    if (want === 0) return [];
    // Rows from before owners have none: they are the default owner's (`ownedBy`).
    const filter = (owner === undefined ? {} : owner === DEFAULT_JOB_OWNER ? { owner: { $in: [owner, null] } } : { owner }) as Filter<StoredJob>;
    return this.#track(() => this.jobs.find(filter, { projection: { _id: 0 } }).sort({ created_at: -1 }).limit(want).toArray());
  }

  async activeJobs(projectId: number): Promise<StoredJob[]> {
    return this.#track(() =>
      this.jobs.find({ project_id: projectId, status: { $in: ACTIVE } } as Filter<StoredJob>, { projection: { _id: 0 } }).sort({ created_at: -1 }).toArray(),
    );
  }

  async replaceItems(jobId: string, fence: number, items: readonly JsonRecord[]): Promise<UpsertOutcome> {
    checkFence(fence);
    return this.#track(async () => {
      const row = await this.jobs.findOne({ job_id: jobId }, { projection: { _id: 0, fence: 1 } });
      const rowFence = row?.fence ?? 0;
      if (row && rowFence > fence) return "stale";
      // Upserts by (job, fence, seq): writing the same fence again (a retry, a redelivery) keeps one copy.
      for (let start = 0; start < items.length; start += ITEM_BATCH) {
        const batch: AnyBulkWriteOperation<ItemDoc>[] = items.slice(start, start + ITEM_BATCH).map((data, i) => {
          const doc: ItemDoc = { job_id: jobId, fence, seq: start + i, data: finiteOrNull(data) };
          return { replaceOne: { filter: { job_id: jobId, fence, seq: start + i }, replacement: doc, upsert: true } };
        });
        await this.#bulk(batch);
      }
      // A longer earlier write under this fence leaves a tail; older fences' items are unreachable.
      await this.items.deleteMany({ job_id: jobId, fence, seq: { $gte: items.length } });
      if (row && rowFence > 0) await this.items.deleteMany({ job_id: jobId, fence: { $lt: rowFence } });
      return "written";
    });
  }

  async getItems(jobId: string): Promise<JsonRecord[]> {
    return this.#track(async () => {
      const row = await this.jobs.findOne({ job_id: jobId }, { projection: { _id: 0, fence: 1 } });
      if (!row) return [];
      const docs = await this.items
        .find({ job_id: jobId, fence: row.fence ?? 0 }, { projection: { _id: 0, data: 1 } })
        .sort({ seq: 1 })
        .toArray();
      return docs.map((d) => d.data);
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** Two concurrent writes of the same fence may both insert one item: the loser's batch is written once more (now as updates). */
  async #bulk(batch: AnyBulkWriteOperation<ItemDoc>[]): Promise<void> {
    try {
      await this.items.bulkWrite(batch, { ordered: false });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      await this.items.bulkWrite(batch, { ordered: false });
    }
  }

  /** Readiness follows the last operation: an outage shows as `error: …` until a call succeeds again. */
  async #track<T>(operation: () => Promise<T>): Promise<T> {
    try {
      const value = await operation();
      this.#lastError = undefined;
      return value;
    } catch (error) {
      this.#lastError = `database unavailable (${(error as Error).name || "error"})`;
      throw error;
    }
  }
}

/**
 * Rows and items written before fencing existed get fence 0, and the old `(job_id, seq)` unique
 * index goes (it would forbid the same seq under two fences). Idempotent and cheap once done.
 */
async function migrateUnfenced(jobs: Collection<StoredJob>, items: Collection<ItemDoc>): Promise<void> {
  await items.dropIndex("job_id_1_seq_1").catch((error: unknown) => {
    if (!(error instanceof MongoServerError && (error.code === INDEX_NOT_FOUND || error.code === NAMESPACE_NOT_FOUND))) throw error;
  });
  await jobs.updateMany({ fence: { $exists: false } } as Filter<StoredJob>, { $set: { fence: 0 } });
  await items.updateMany({ fence: { $exists: false } } as Filter<ItemDoc>, { $set: { fence: 0 } });
}
