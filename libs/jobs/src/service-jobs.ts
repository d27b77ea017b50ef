import type { NatsConnection } from "@nats-io/transport-node";
import type { JobService } from "@litrev/contracts";
import { duringStartUp } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import { JobMirror } from "./client/mirror";
import { PartialReader } from "./client/partial-reader";
import { JobReader } from "./client/reader";
import { openJobInfra, type JobInfra } from "./infra";
import { OrphanSweep } from "./orphan-sweep";
import type { JobStore } from "./store/job-store";
import { openJobStore } from "./store/open-job-store";

export interface ServiceJobsOptions {
  /** MongoDB's URL; without it the store of record is the embedded one on JetStream. */
  mongoUrl: string | undefined;
  ackWaitMs: number;
  maxAttempts: number;
  retentionMs: number;
  /** How long the embedded store of record keeps a job after its last write, and (with either store) its artifact. */
  storeRetentionMs: number;
  /** `JOB_ORPHAN_LEASE_MS`: how long a job whose command is not queued may go unseen before it is failed. */
  orphanLeaseMs: number;
  /** `JOB_ORPHAN_SWEEP_MS`: the pause between two orphan sweeps of this replica. */
  orphanSweepMs: number;
  logger: Logger;
}

/** Everything a job-owning service needs besides its worker: the NATS resources, its store of record, the reads, the orphan sweep. */
export interface ServiceJobs {
  infra: JobInfra;
  store: JobStore;
  mirror: JobMirror;
  reader: JobReader;
  sweep: OrphanSweep;
  close(): Promise<void>;
}

/** Opens one service's job side, the same way for every job kind. */
export async function openServiceJobs(nc: NatsConnection, service: JobService, options: ServiceJobsOptions): Promise<ServiceJobs> {
  const { logger } = options;
  // Each step on JetStream waits out a NATS cluster electing its leaders (docs/resilience.md).
  const infra = await duringStartUp("job streams and buckets", () => openJobInfra(nc, service, { ...options, resultsRetentionMs: options.storeRetentionMs }), logger);
  const store = await duringStartUp("store of record", () => openJobStore({
    url: options.mongoUrl,
    nc,
    service,
    jobs: `${service}_jobs`,
    items: `${service}_results`,
    retentionMs: options.storeRetentionMs,
    logger,
  }), logger);
  const mirror = await duringStartUp("job state mirror", () => JobMirror.open(nc, service, logger), logger);
  const reader = new JobReader(service, mirror, infra.data, new PartialReader(infra.data), store);
  // Every job kind's orphans end here, whether or not its kind ever admits another job of the project.
  const sweep = new OrphanSweep(infra, store, { leaseMs: options.orphanLeaseMs, intervalMs: options.orphanSweepMs, logger });
  sweep.start();
  return {
    infra,
    store,
    mirror,
    reader,
    sweep,
    close: async () => {
      await sweep.stop();
      mirror.stop();
      await store.close();
    },
  };
}
