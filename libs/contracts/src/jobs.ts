import { z } from "zod";
import { Bibliography } from "./bibliography";
import { JobStatus, JsonObject, Timestamp } from "./common";
import { JobReport } from "./job-exports";

/**
 * Durable-job messages (docs/jobs.md). Each carries a literal `version` and a `type`
 * discriminator, so a reader can reject what it does not understand instead of guessing.
 */

/** Where a large value lives in a job data object store (never inline in a message). */
export const ObjectRef = z.object({
  object: z.string(),
  bytes: z.number().int().nonnegative(),
  /**
   * Set when the value is a chunked list (JobData.putLines: a head object, then chunk objects of
   * JSON Lines) rather than one JSON object: how many items it holds. Readers then read it chunk by
   * chunk instead of parsing it whole.
   */
  lines: z.number().int().nonnegative().optional(),
  /** With `lines`: the list is `<object>/head` and the chunk objects `<object>/0 … <object>/<chunks-1>`. */
  chunks: z.number().int().nonnegative().optional(),
  /**
   * A list the gateway staged, as the owning service admitted it: the object-store digests of its
   * head and of each chunk (`[head, 0, 1, …]`). A read refuses a part whose digest differs, so a
   * staged input replaced after admission (the gateway may write the staging store) is never run.
   */
  digests: z.array(z.string()).optional(),
});
export type ObjectRef = z.infer<typeof ObjectRef>;

/** A job command on the work-queue stream, published with `Nats-Msg-Id = job_id`. */
export const JobRunCommand = z.object({
  version: z.literal(1),
  type: z.literal("job.run"),
  service: z.string(),
  job_id: z.string(),
  submitted_at: Timestamp,
  /** The job's input, in the service's job data object store. */
  input: ObjectRef.nullable(),
  /** The client's provider key, sealed with JOB_KEY_SECRET; null means "use the server's key". */
  sealed_provider_key: z.string().nullable(),
  /** Small service-specific parameters (the input's bulk lives in `input`). */
  params: JsonObject,
});
export type JobRunCommand = z.infer<typeof JobRunCommand>;

export const JobCommand = z.discriminatedUnion("type", [JobRunCommand]);
export type JobCommand = z.infer<typeof JobCommand>;

const nullableNumber = z.number().nullable();

/**
 * The live state of one job: the value under `job.<id>` in the service's state bucket. Written by
 * admission and by the worker (compare-and-set on the entry revision), read by the gateway's
 * mirror for polls. It never holds results: those are an object (`result`).
 */
export const LiveJobState = z.object({
  version: z.literal(1),
  type: z.literal("job.state"),
  job_id: z.string(),
  service: z.string(),
  status: JobStatus,
  /** 0..1, never decreasing. */
  progress: z.number(),
  stage: z.string(),
  stage_timings: z.record(z.string(), nullableNumber),
  stage_started_at: Timestamp.nullable(),
  project_id: z.number().int().nullable(),
  /**
   * The client whose service key created the job (an owner id from the gateway's key table, never a
   * key). Absent on jobs created before jobs had owners: they belong to `DEFAULT_JOB_OWNER`.
   */
  owner: z.string().optional(),
  model_version: z.string(),
  config: JsonObject,
  estimated_cost_usd: nullableNumber,
  created_at: Timestamp,
  started_at: Timestamp.nullable(),
  heartbeat_at: Timestamp.nullable(),
  completed_at: Timestamp.nullable(),
  duration_ms: z.number().int().nullable(),
  error: z.string().nullable(),
  error_category: z.string().nullable(),
  error_retryable: z.boolean().nullable(),
  /** Deliveries of the command seen by workers, and how many of them were graceful hand-backs. */
  attempt: z.number().int().nonnegative(),
  handoffs: z.number().int().nonnegative(),
  /** The worker instance holding the current attempt. */
  worker: z.string().nullable(),
  /**
   * The terminal result object (items plus extras): written only when the store of record could not
   * take the results, so the live state is then their only copy.
   */
  result: ObjectRef.nullable(),
  /**
   * Whether the first poll of the terminal job may release its live entry (the spec's "removed from
   * the in-memory registry the first time it is polled"): true once the job's artifact (its results)
   * is in place, or when the deployment has no store of record at all; false while
   * the live entry is the only copy, so that no read destroys it.
   */
  releasable: z.boolean().default(false),
  /** Small service-specific live data (usage so far, counts). */
  extra: JsonObject,
});
export type LiveJobState = z.infer<typeof LiveJobState>;

/** The value under `lock.[<owner>.]<project_id>`: which job holds that owner's project's one active slot. */
export const ProjectLock = z.object({
  version: z.literal(1),
  type: z.literal("job.lock"),
  job_id: z.string(),
  created_at: Timestamp,
  /** The holder job's owner, so a 409 can tell whether it may name the job (docs/security.md). */
  owner: z.string().optional(),
});
export type ProjectLock = z.infer<typeof ProjectLock>;

/** One finished unit of work (e.g. a batch of labelled papers) on the checkpoint stream. */
export const JobCheckpoint = z.object({
  version: z.literal(1),
  type: z.literal("job.checkpoint"),
  job_id: z.string(),
  stage: z.string(),
  unit: z.string(),
  data: z.unknown(),
  /**
   * The delivery number of the run that saved it (its lease). A load ignores a checkpoint saved
   * after a newer run fenced the job (see libs/jobs checkpoints.ts). Absent on checkpoints from
   * before fencing: always loaded.
   */
  fence: z.number().int().nonnegative().optional(),
});
export type JobCheckpoint = z.infer<typeof JobCheckpoint>;

/**
 * What differs between the job kinds, as data: the job machinery has one code path and reads these.
 * Only screening keeps one active job per project (the spec's 409); the indexer allows several.
 */
/**
 * Where a running job's finished items are (live `extra.partial`): `chunks` immutable objects
 * `jobDataObjects.partial(job_id, fence, 0 … chunks-1)` holding `items` items in all.
 */
export const PartialItemsRef = z.object({
  fence: z.number().int().nonnegative(),
  chunks: z.number().int().nonnegative(),
  items: z.number().int().nonnegative(),
});
export type PartialItemsRef = z.infer<typeof PartialItemsRef>;

/**
 * An item's title and abstract as the job was given them, and the bibliographic fields it came with
 * (absent or null: none); the artifact keeps them as line lists, `titles`, `abstracts`, `bibliography`.
 */
export const ItemText = z.object({ title: z.string(), abstract: z.string(), bibliography: Bibliography.nullish() });
export type ItemText = z.infer<typeof ItemText>;

/**
 * The head of a finished job's artifact (`jobDataObjects.artifactHead(job_id)`), written once by the
 * worker that ended the job, after its item chunks and before its live state turns terminal, so a
 * head found means the artifact is complete. It holds whose job it is, the poll body's text around
 * the item list (`poll.before` + the items joined by commas + `poll.after`; `after` null when the
 * view shows no items), the stored record (with its small result extras) that exports read, the
 * methods report, and where the items are (a chunked list, one item per line).
 */
export const JobArtifactHead = z.object({
  version: z.literal(1),
  owner: z.string(),
  status: JobStatus,
  poll: z.object({ before: z.string(), after: z.string().nullable() }),
  record: z.record(z.string(), z.unknown()),
  report: JobReport,
  items: ObjectRef,
  /**
   * Each item's title, then each item's abstract: two line lists (one JSON string per line), line
   * for line beside `items`, copied from the job's input as the items were written; absent when the
   * input was gone (an artifact written from a row, for a job that ended with no items). Kept apart from the items so
   * that the poll body stays the spec's, and from each other so that the exports that name each
   * item (CSV, JSON Lines) read only the titles; RIS and validation samples also read the abstracts.
   */
  titles: ObjectRef.optional(),
  abstracts: ObjectRef.optional(),
  /**
   * Each item's bibliographic fields (`Bibliography`) as one JSON text per line, `""` for an item
   * without any, line for line beside `items`; absent when no item had any (or the input was gone).
   * Every export writes them back (RIS tags, CSV and JSON Lines columns).
   */
  bibliography: ObjectRef.optional(),
  /**
   * False when the service had no store of record (the spec's "without persistence"): the job is
   * read once, by its first poll, through the owning service, which then erases it; later reads
   * are 404 as the spec says. Absent: persistent.
   */
  persistent: z.literal(false).optional(),
});
export type JobArtifactHead = z.infer<typeof JobArtifactHead>;
