/**
 * @litrev/jobs — durable jobs over JetStream. Entry points: `@litrev/jobs/client` (gateway and
 * request handlers), `@litrev/jobs/worker` (job workers), and this one, which adds the shared
 * infrastructure and the stores of record for the services that own jobs.
 */
export * from "./client/index";
export * from "./worker/index";
export { CheckpointLog, MAX_CHECKPOINT_BYTES } from "./checkpoints";
export { JobsEnv } from "./env";
export { finiteOrNull } from "./finite";
export { DEFAULT_JOB_INFRA_OPTIONS, openJobInfra } from "./infra";
export type { JobInfra, JobInfraOptions, ResolvedJobInfraOptions } from "./infra";
export { JobQueue } from "./queue";
export { JobRegistry } from "./registry";
export type { LiveEntry, LockEntry, UpdatedEntry } from "./registry";
export { retrying } from "./retry";
export type { RetryOptions } from "./retry";
export { MemoryJobStore } from "./store/job-store";
export { DEFAULT_STORE_RETENTION_MS, EmbeddedJobStore } from "./store/embedded-job-store";
export { MongoJobStore } from "./store/mongo-job-store";
export type { MongoJobStoreOptions } from "./store/mongo-job-store";
export { openJobStore } from "./store/open-job-store";
export type { OpenJobStoreOptions } from "./store/open-job-store";
export { RetryingJobStore } from "./store/retrying-job-store";
export { storageRead } from "./store/storage-read";
export { openServiceJobs } from "./service-jobs";
export type { ServiceJobs, ServiceJobsOptions } from "./service-jobs";
export { OrphanSweep } from "./orphan-sweep";
export type { OrphanSweepOptions } from "./orphan-sweep";
export { reapIfOrphaned } from "./orphans";
export type { OrphanedJob, OrphanRule } from "./orphans";
export * from "./kind/index";
export { isWrongRevision } from "./nats-errors";
