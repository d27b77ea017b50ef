import { MongoClient, MongoServerError, type Collection, type Db, type Filter } from "mongodb";
import { DEFAULT_JOB_OWNER } from "@litrev/contracts";
import { finiteOrNull } from "../finite";
import { checkFence, isActiveStatus, type JobStore, type StoredJob, type UpsertOutcome } from "./job-store";


export interface MongoJobStoreOptions {
  url: string;
  /** Collection names, e.g. `screening_jobs` and `screening_results` (items older versions stored; only erased now). */
  jobs: string;
  items: string;
  /** Database name; by default the one in the URL (else `litrev`). */
  database?: string;
  /** Start-up budget: without a server, the driver would otherwise wait 30 s. */
  serverSelectionTimeoutMS?: number;
}

/**
 * The database a `MONGO_URL` names (`mongodb://host/name?…`), else `litrev`: the driver's own
 * default would be `test`. The authority holds no raw `/` (credentials are percent-encoded).
 */
export function databaseOf(url: string): string {
  const path = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/i.exec(url)?.[1] ?? "";
  return decodeURIComponent(path) || "litrev";
}

/**
 * What a failed start-up says, by the driver's error class (its message may carry the URL, so
 * never that): only a server that could not be reached is "unreachable".
 */
export function connectFailure(error: unknown): string {
  const { name, codeName } = error as { name?: string; codeName?: string };
  if (name === "MongoServerSelectionError" || name === "MongoNetworkError" || name === "MongoNetworkTimeoutError") return "MongoDB is unreachable";
  if (name === "MongoParseError" || name === "MongoAPIError") return "MONGO_URL is not a valid MongoDB connection string";
  if (codeName === "AuthenticationFailed" || codeName === "Unauthorized") return `MongoDB refused the credentials or their rights (${codeName})`;
  if (codeName) return `MongoDB refused the job store's set-up (${codeName})`;
  return `MongoDB could not be initialised (${name || "error"})`;
}

/** A document of items an older version stored beside the row (read no more: the artifact holds a job's items). */
interface ItemDoc {
  job_id: string;
}

const DUPLICATE_KEY = 11000;
const ACTIVE = ["pending", "running"];

/** `ownedBy` as a query: rows from before owners have none, and they are the default owner's. */
const ownerFilter = (owner: string | undefined) => (owner === undefined ? {} : owner === DEFAULT_JOB_OWNER ? { owner: { $in: [owner, null] } } : { owner });

/**
 * The system of record in MongoDB: one document per job (unique index on `job_id`); a job's items
 * live only in its finished artifact. NaN/±∞ are stored as null.
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
      const db: Db = client.db(options.database ?? databaseOf(options.url));
      const jobs = db.collection<StoredJob>(options.jobs);
      const items = db.collection<ItemDoc>(options.items);
      await migrateUnfenced(jobs);
      await Promise.all([
        jobs.createIndex({ job_id: 1 }, { unique: true }),
        jobs.createIndex({ created_at: -1 }),
        jobs.createIndex({ owner: 1, created_at: -1 }),
        jobs.createIndex({ project_id: 1, status: 1 }),
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
    // Matches the row only if the fencing rule accepts this write (job-store.ts `accepts`): a fence
    // no lower than the row's, and an active write only over an active row.
    const filter = {
      job_id: job.job_id,
      fence: { $lte: job.fence },
      ...(isActiveStatus(job.status) ? { status: { $in: ACTIVE } } : {}),
    } as Filter<StoredJob>;
    return this.#track(async () => {
      try {
        await this.jobs.replaceOne(filter, doc, { upsert: true });
        return "written";
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      }
      // A row exists that the filter did not match: it refused the write, or it is a concurrent
      // first write that won the insert. Decide against it once more (only a client's deletion removes a row).
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
    const filter = ownerFilter(owner) as Filter<StoredJob>;
    return this.#track(() => this.jobs.find(filter, { projection: { _id: 0 } }).sort({ created_at: -1 }).limit(want).toArray());
  }

  async activeJobs(projectId: number, owner?: string): Promise<StoredJob[]> {
    const filter = { project_id: projectId, status: { $in: ACTIVE }, ...ownerFilter(owner) } as Filter<StoredJob>;
    return this.#track(() => this.jobs.find(filter, { projection: { _id: 0 } }).sort({ created_at: -1 }).toArray());
  }

  /** Older versions' items first: a row left by a failure half-way still lists the job, so a repeat finds it. */
  async deleteJob(jobId: string): Promise<void> {
    await this.#track(async () => {
      await this.items.deleteMany({ job_id: jobId });
      await this.jobs.deleteOne({ job_id: jobId });
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
      this.#lastError = `database unavailable (${(error as Error).name || "error"})`;
      throw error;
    }
  }
}

/** Rows written before fencing existed get fence 0. Idempotent and cheap once done. */
async function migrateUnfenced(jobs: Collection<StoredJob>): Promise<void> {
  await jobs.updateMany({ fence: { $exists: false } } as Filter<StoredJob>, { $set: { fence: 0 } });
}
