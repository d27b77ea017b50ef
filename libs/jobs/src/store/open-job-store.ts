import type { NatsConnection } from "@nats-io/transport-node";
import type { JobService } from "@litrev/contracts";
import type { Logger } from "@litrev/telemetry";
import { DEFAULT_STORE_RETENTION_MS, EmbeddedJobStore } from "./embedded-job-store";
import { NoJobStore, type JobStore } from "./job-store";
import { connectFailure, MongoJobStore } from "./mongo-job-store";
import { RetryingJobStore } from "./retrying-job-store";

export interface OpenJobStoreOptions {
  /** MONGO_URL: set → MongoDB; unset → the embedded JetStream store. */
  url: string | undefined;
  /** The service's NATS connection (the embedded store lives in its JetStream). */
  nc: NatsConnection;
  service: JobService;
  /** MongoDB collection names, e.g. `screening_jobs` and `screening_results`. */
  jobs: string;
  items: string;
  logger: Logger;
  /** Embedded store only: how long rows and items outlive their last write (default 30 days). */
  retentionMs?: number;
  /** MongoDB only: database name (default: the URL's, else `litrev`). */
  database?: string;
  /** MongoDB only: the start-up budget before continuing without persistence (default 3 s). */
  serverSelectionTimeoutMS?: number;
}

/**
 * The service's store of record, always wrapped in `RetryingJobStore` (writes that fail during an
 * outage are kept and retried). MONGO_URL unset → the embedded JetStream store; set → MongoDB, and
 * when MongoDB is unreachable at start-up, a store without persistence and one clear warning (spec:
 * "If database initialisation fails, the service continues without persistence").
 */
export async function openJobStore(options: OpenJobStoreOptions): Promise<JobStore> {
  const { logger } = options;
  if (!options.url) {
    const retentionMs = options.retentionMs ?? DEFAULT_STORE_RETENTION_MS;
    const store = await EmbeddedJobStore.open(options.nc, options.service, { retentionMs });
    logger.info({ store: store.describe(), retention_ms: retentionMs }, "job store of record: embedded JetStream (MONGO_URL is not set)");
    return new RetryingJobStore(store, logger);
  }
  try {
    const store = await MongoJobStore.connect({
      url: options.url,
      jobs: options.jobs,
      items: options.items,
      ...(options.database ? { database: options.database } : {}),
      ...(options.serverSelectionTimeoutMS ? { serverSelectionTimeoutMS: options.serverSelectionTimeoutMS } : {}),
    });
    logger.info({ store: store.describe(), jobs: options.jobs, items: options.items }, "job store of record: MongoDB");
    return new RetryingJobStore(store, logger);
  } catch (error) {
    // The driver's message may carry the URL (and so credentials): only its class is logged.
    const reason = connectFailure(error);
    logger.warn({ reason }, `${reason}: continuing without persistence (listings are empty; a finished job is readable once)`);
    return new NoJobStore(`database initialisation failed at start-up (${reason}); running without persistence`);
  }
}
