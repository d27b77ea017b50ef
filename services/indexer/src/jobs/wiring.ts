import { DEFAULT_MODEL, headers, operations } from "@litrev/contracts";
import { JobWorker, KeySealer, openJobInfra, openJobStore, type JobStore } from "@litrev/jobs";
import type { LlmClient } from "@litrev/llm";
import { handler, type HandlerEntry } from "@litrev/messaging";
import type { ServiceRuntime } from "@litrev/runtime";
import type { IndexerEnv } from "../env";
import { createIndexerJob } from "./admission";
import { IndexerJobReader } from "./reads";
import { indexerJobHandler } from "./run-job";

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
  const sealer = KeySealer.fromSecret(env.JOB_KEY_SECRET);
  const store = await openJobStore({ url: env.MONGO_URL, jobs: "indexer_jobs", items: "indexer_results", logger });
  runtime.shutdown.add("job store", () => store.close());
  const infra = await openJobInfra(runtime.nc, "indexer", {
    ackWaitMs: env.JOB_ACK_WAIT_MS,
    maxAttempts: env.JOB_MAX_ATTEMPTS,
    retentionMs: env.JOB_RETENTION_MS,
  });
  const reader = new IndexerJobReader(infra, store);
  const worker = new JobWorker({
    infra,
    store,
    sealer,
    logger,
    instance: runtime.instance,
    concurrency: env.JOB_CONCURRENCY,
    handler: indexerJobHandler({ llm, config: runtime.config, infra, concurrency: env.INDEXER_JOB_RECORD_CONCURRENCY }),
  });
  worker.start();
  runtime.shutdown.add("job worker", () => worker.stop());

  const admission = { infra, store, sealer, logger, config: runtime.config, resolveModel: (m: string) => llm.resolveModel(m) };
  const handlers = [
    handler(operations.createIndexerJob, async (req, ctx) =>
      createIndexerJob(admission, { ...req, model: runtime.model(req.model, DEFAULT_MODEL.indexerRun) }, { plain: ctx.providerKey, sealed: ctx.header(headers.sealedProviderKey) }),
    ),
    handler(operations.getIndexerJob, async (req) => reader.get(req.job_id)),
    handler(operations.listIndexerJobs, async (req) => reader.list(req.limit)),
    handler(operations.activeIndexerJob, async (req) => reader.active(req.project_id)),
  ];
  return { handlers, store, worker };
}
