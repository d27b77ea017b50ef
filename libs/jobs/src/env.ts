import { z } from "zod";
import { JobKeySecretEnv } from "./key-sealer";

/** Settings of a job-running service; extend a service's env schema with this (`BaseEnv.extend(JobsEnv.shape)`). */
export const JobsEnv = JobKeySecretEnv.extend({
  /** Jobs one worker process runs at once. */
  JOB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** JetStream ack wait of the worker consumer; a crashed worker's job is redelivered after this. */
  JOB_ACK_WAIT_MS: z.coerce.number().int().min(1_000).default(30_000),
  /** Crash-deliveries before a job is failed. */
  JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  /** A non-terminal job unseen for this long, whose command is no longer queued, is an orphan. */
  JOB_ORPHAN_LEASE_MS: z.coerce.number().int().min(0).default(60_000),
  /** The pause between two orphan sweeps of a job-owning replica (every job kind's orphans are failed by them). */
  JOB_ORPHAN_SWEEP_MS: z.coerce.number().int().min(500).max(3_600_000).default(30_000),
  /** How long live state, inputs, results and checkpoints are kept after their last write. */
  JOB_RETENTION_MS: z.coerce.number().int().min(60_000).default(7 * 24 * 60 * 60 * 1000),
  /** How long the embedded store of record (used when MONGO_URL is unset) keeps a job after its last write. */
  JOB_STORE_RETENTION_MS: z.coerce.number().int().min(60_000).default(30 * 24 * 60 * 60 * 1000),
  /**
   * Per owner of service keys and job service (docs/limits.md): what its jobs may hold in storage
   * (live jobs' inputs and an upper estimate of results, until the results expire), in MiB; 0: no limit.
   * Over it: 429 (413 for a job larger than the whole quota), checked before the job's input is stored.
   */
  OWNER_STORAGE_MB: z.coerce.number().int().min(0).max(1024 * 1024).default(1024),
  /** Per owner and job service: pending and running jobs at once; one more is answered 429. */
  OWNER_MAX_LIVE_JOBS: z.coerce.number().int().min(1).max(500).default(100),
});
export type JobsEnv = z.infer<typeof JobsEnv>;
