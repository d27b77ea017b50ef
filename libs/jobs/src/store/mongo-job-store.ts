import { MongoClient, MongoServerError, type Collection, type Db } from "mongodb";
import type { Logger } from "@litrev/telemetry";
import { finiteOrNull } from "../finite";
import { NoJobStore, type JobStore, type JsonRecord, type StoredJob, type UpsertOutcome } from "./job-store";
import { RetryingJobStore } from "./retrying-job-store";

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
  seq: number;
  data: JsonRecord;
}

const ITEM_BATCH = 1_000;

/**
 * The system of record in MongoDB: one document per job (upsert keyed by `job_id`, unique index)
 * and one document per item in a separate collection, so a 20,000-paper job is 20,000 small
 * documents rather than one near the 16 MB limit. NaN/±∞ are stored as null.
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
      await Promise.all([
        jobs.createIndex({ job_id: 1 }, { unique: true }),
        jobs.createIndex({ created_at: -1 }),
        jobs.createIndex({ project_id: 1, status: 1 }),
        items.createIndex({ job_id: 1, seq: 1 }, { unique: true }),
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
    const doc = finiteOrNull(job);
    await this.#track(async () => {
      try {
        await this.jobs.replaceOne({ job_id: job.job_id }, doc, { upsert: true });
      } catch (error) {
        // Two concurrent upserts of a new id: one insert wins, the other must update.
        if (error instanceof MongoServerError && error.code === 11000) {
          await this.jobs.replaceOne({ job_id: job.job_id }, doc, { upsert: true });
        } else throw error;
      }
    });
    return "written";
  }

  async getJob(jobId: string): Promise<StoredJob | null> {
    return this.#track(() => this.jobs.findOne({ job_id: jobId }, { projection: { _id: 0 } }));
  }

  async listJobs(limit: number): Promise<StoredJob[]> {
    return this.#track(() => this.jobs.find({}, { projection: { _id: 0 } }).sort({ created_at: -1 }).limit(limit).toArray());
  }

  async activeJobs(projectId: number): Promise<StoredJob[]> {
    return this.#track(() =>
      this.jobs.find({ project_id: projectId, status: { $in: ["pending", "running"] } }, { projection: { _id: 0 } }).toArray(),
    );
  }

  async replaceItems(jobId: string, _fence: number, items: readonly JsonRecord[]): Promise<UpsertOutcome> {
    await this.#track(async () => {
      await this.items.deleteMany({ job_id: jobId });
      for (let start = 0; start < items.length; start += ITEM_BATCH) {
        const docs = items.slice(start, start + ITEM_BATCH).map((data, i) => ({ job_id: jobId, seq: start + i, data: finiteOrNull(data) }));
        await this.items.insertMany(docs, { ordered: false });
      }
    });
    return "written";
  }

  async getItems(jobId: string): Promise<JsonRecord[]> {
    return this.#track(async () => {
      const docs = await this.items.find({ job_id: jobId }, { projection: { _id: 0, data: 1 } }).sort({ seq: 1 }).toArray();
      return docs.map((d) => d.data);
    });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** Readiness follows the last operation: an outage shows as `error: …` until a call succeeds again. */
  async #track<T>(operation: () => Promise<T>): Promise<T> {
    try {
      const value = await operation();
      this.#lastError = undefined;
      return value;
    } catch (error) {
      this.#lastError = (error as Error).message;
      throw error;
    }
  }
}

export interface OpenJobStoreOptions extends Omit<MongoJobStoreOptions, "url"> {
  url: string | undefined;
  logger: Logger;
}

/**
 * MongoDB when MONGO_URL is set and reachable; otherwise a store without persistence and one
 * clear warning (spec: "If database initialisation fails, the service continues without persistence").
 */
export async function openJobStore(options: OpenJobStoreOptions): Promise<JobStore> {
  if (!options.url) {
    options.logger.warn("MONGO_URL is not set: jobs are not persisted (listings are empty; a finished job is readable once)");
    return new NoJobStore();
  }
  try {
    const store = await MongoJobStore.connect({ ...options, url: options.url });
    options.logger.info({ jobs: options.jobs, items: options.items }, "job persistence: MongoDB");
    // A later outage loses nothing: failed writes are kept and retried until the database is back.
    return new RetryingJobStore(store, options.logger);
  } catch (error) {
    const reason = (error as Error).message;
    options.logger.warn({ reason }, "MongoDB is unreachable: continuing without persistence (listings are empty; a finished job is readable once)");
    return new NoJobStore(`database unreachable at start-up (${reason}); running without persistence`);
  }
}
