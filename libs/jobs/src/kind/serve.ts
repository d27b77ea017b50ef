import type { NatsConnection } from "@nats-io/transport-node";
import type { HandlerEntry, RecordStore } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";
import type { JobsEnv } from "../env";
import { KeySealer } from "../key-sealer";
import { OwnerStorage } from "../owner-storage";
import { isActive } from "../state";
import { openServiceJobs, type ServiceJobs } from "../service-jobs";
import { JobWorker } from "../worker/job-worker";
import type { JobKind, KindRequest } from "./define";
import { jobKindHandlers } from "./handlers";
import { JobPricing } from "./pricing";

/** What serving a job kind needs of the service's runtime (`ServiceRuntime` of @litrev/runtime has it). */
export interface JobKindRuntime {
  readonly nc: NatsConnection;
  readonly logger: Logger;
  readonly instance: string;
  readonly shutdown: { add(name: string, step: () => Promise<void> | void): void };
  model(requested: string, specDefault: string): string;
  /** The provider client, whose alias table follows `PUT /v1/config/models`. */
  readonly llm: { readonly modelAliases: Readonly<Record<string, string>>; readonly hasDefaultKey: boolean };
  /** The shared limits bucket's records (per-owner storage quotas). */
  readonly limits: RecordStore;
}

export interface ServedJobKind {
  handlers: HandlerEntry[];
  jobs: ServiceJobs;
  worker: JobWorker;
  pricing: JobPricing;
  /** The owners' storage quotas of this service (what else its handlers store beside a job is counted there too). */
  storage: OwnerStorage;
}

/**
 * Serves a declared job kind: opens the service's job side (store of record, reads, orphan sweep)
 * from the environment, starts its worker and registers the shutdown steps, which run in reverse
 * order: the operations drain first, then running jobs are handed back, then the store closes.
 */
export async function serveJobKind<C extends KindRequest, E extends { model: string }>(
  runtime: JobKindRuntime,
  env: JobsEnv & { MONGO_URL?: string | undefined },
  kind: JobKind<C, E>,
): Promise<ServedJobKind> {
  const { logger } = runtime;
  const sealer = KeySealer.fromEnv(env);
  const jobs = await openServiceJobs(runtime.nc, kind.service, {
    mongoUrl: env.MONGO_URL,
    ackWaitMs: env.JOB_ACK_WAIT_MS,
    maxAttempts: env.JOB_MAX_ATTEMPTS,
    retentionMs: env.JOB_RETENTION_MS,
    storeRetentionMs: env.JOB_STORE_RETENTION_MS,
    orphanLeaseMs: env.JOB_ORPHAN_LEASE_MS,
    orphanSweepMs: env.JOB_ORPHAN_SWEEP_MS,
    logger,
  });
  runtime.shutdown.add("job store", () => jobs.close());
  const { infra, store, reader } = jobs;
  const worker = new JobWorker({ infra, store, sealer, logger, instance: runtime.instance, concurrency: env.JOB_CONCURRENCY, handler: kind.run, prompts: kind.prompts });
  worker.start();
  runtime.shutdown.add("job worker", () => worker.stop());
  const pricing = new JobPricing(() => runtime.llm.modelAliases);
  const storage = new OwnerStorage(
    runtime.limits,
    kind.service,
    {
      bytes: env.OWNER_STORAGE_MB * 1024 * 1024,
      liveJobs: env.OWNER_MAX_LIVE_JOBS,
      // Results stay in the job's artifact, kept as long as the embedded store keeps rows (with either store).
      keptForMs: Math.max(env.JOB_RETENTION_MS, env.JOB_STORE_RETENTION_MS),
    },
    async (jobId) => {
      const entry = await jobs.mirror.fetch(jobId);
      return !entry ? "none" : isActive(entry.state) ? "active" : "ended";
    },
  );
  const handlers = jobKindHandlers(kind, {
    infra,
    store,
    reader,
    sealer,
    logger,
    orphanLeaseMs: env.JOB_ORPHAN_LEASE_MS,
    storage,
    pricing,
    chooseModel: (requested, specDefault) => runtime.model(requested, specDefault),
    hasProviderKey: () => runtime.llm.hasDefaultKey,
  });
  return { handlers, jobs, worker, pricing, storage };
}
