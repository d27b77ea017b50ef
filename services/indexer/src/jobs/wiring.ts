import { CreateIndexerJobMessage, DEFAULT_MODEL, operations, type IndexerJob, type IndexerJobListItem } from "@litrev/contracts";
import { jobExportHandlers, JobWorker, KeySealer, openServiceJobs, requestOwner, type JobStore } from "@litrev/jobs";
import type { LlmClient } from "@litrev/llm";
import { handler, type HandlerEntry } from "@litrev/messaging";
import type { ServiceRuntime } from "@litrev/runtime";
import type { IndexerEnv } from "../env";
import { createIndexerJob } from "./admission";
import type { ExtractionPlan } from "../pipeline/extract-record";
import { indexerProvenance } from "./provenance";
import { indexerJobHandler } from "./run-job";
import { PROMPTS } from "../prompts";

export interface IndexerJobs {
  handlers: HandlerEntry[];
  store: JobStore;
  worker: JobWorker;
}

/**
 * Indexer jobs on the shared job machinery (libs/jobs): admission and reads answer over
 * request-reply; a JobWorker pulls commands from the durable work queue and runs them. The
 * worker and the store are stopped on shutdown (running jobs are handed to another replica).
 */
export async function startIndexerJobs(runtime: ServiceRuntime, env: IndexerEnv, llm: LlmClient): Promise<IndexerJobs> {
  const { logger } = runtime;
  const sealer = KeySealer.fromEnv(env);
  const jobs = await openServiceJobs(runtime.nc, "indexer", {
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
  // Under the configuration in force when called: at admission, and again when a run starts calling the model.
  const describe = (input: { model: string; resolved: string; plan: ExtractionPlan }) =>
    indexerProvenance({ ...input, config: runtime.config(), provider: llm.provider, version: runtime.version });
  const worker = new JobWorker({
    infra,
    store,
    sealer,
    logger,
    instance: runtime.instance,
    concurrency: env.JOB_CONCURRENCY,
    handler: indexerJobHandler({ llm, config: runtime.config, concurrency: env.INDEXER_JOB_RECORD_CONCURRENCY, describe }),
  });
  worker.start();
  runtime.shutdown.add("job worker", () => worker.stop());

  const admission = {
    infra,
    store,
    sealer,
    logger,
    config: runtime.config,
    resolveModel: (m: string) => llm.resolveModel(m),
    describe,
    orphanLeaseMs: env.JOB_ORPHAN_LEASE_MS,
  };
  const handlers = [
    // Records may be empty over NATS: the gateway stages a large list and sends its reference.
    handler({ ...operations.createIndexerJob, request: CreateIndexerJobMessage }, async (req, ctx) =>
      createIndexerJob(admission, { ...req, model: runtime.model(req.model, DEFAULT_MODEL.indexerRun) }, ctx.header),
    ),
    // Reads for a client see only its own jobs (the gateway names the client; docs/security.md).
    handler(operations.getIndexerJob, async (req, ctx) => (await reader.get(req.job_id, requestOwner(ctx.header))) as IndexerJob),
    handler(operations.listIndexerJobs, async (req, ctx) => (await reader.list(req.limit, requestOwner(ctx.header))) as IndexerJobListItem[]),
    handler(operations.activeIndexerJob, async (req, ctx) => (await reader.activeForProject(req.project_id, requestOwner(ctx.header))) as IndexerJob | null),
    ...jobExportHandlers("indexer", reader, PROMPTS.builtIn),
  ];
  return { handlers, store, worker };
}
