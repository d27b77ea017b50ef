import { DEFAULT_MODEL, type ScreeningCriterion, type ScreeningJobParams } from "@litrev/contracts";
import { JobWorker, KeySealer, openServiceJobs, type JobStore } from "@litrev/jobs";
import { startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { screeningHandlers } from "./handlers";
import { createLiveModel } from "./model/live-model";
import { createMockModel } from "./model/mock-model";
import type { PipelineSettings } from "./pipeline/run";
import { runScreeningPipeline } from "./pipeline/run";
import { PREAMBLE, PROMPT_LIST } from "./prompts";
import { screeningProvenance } from "./provenance";

const env = loadEnv();
const sealer = KeySealer.fromEnv(env);
const pipeline: PipelineSettings = {
  labelBatch: env.SCREENING_LABEL_BATCH,
  reasonBatch: env.SCREENING_REASON_BATCH,
  clusterChunk: env.SCREENING_CLUSTER_CHUNK,
  assignBatch: env.SCREENING_ASSIGN_BATCH,
  maxClusters: env.SCREENING_MAX_CLUSTERS,
  callConcurrency: env.SCREENING_CALL_CONCURRENCY,
  maxLostShare: env.MAX_LOST_PAPER_SHARE,
};
let store: JobStore | undefined;

await startService({
  service: "screening",
  env,
  sealer,
  defaults: {
    service_id: "screening",
    model: DEFAULT_MODEL.screening,
    system_prompt: PREAMBLE,
    prompt_template_id: "screening.default",
    temperature: 1,
    max_output_tokens: 4096,
    extra: {},
  },
  prompts: PROMPT_LIST,
  databaseStatus: () => store?.status() ?? "error: not connected yet",
  storeDescription: () => store?.describe() ?? "not connected yet",
  handlers: async (runtime) => {
    const { logger, shutdown } = runtime;
    const jobs = await openServiceJobs(runtime.nc, "screening", {
      mongoUrl: env.MONGO_URL,
      ackWaitMs: env.JOB_ACK_WAIT_MS,
      maxAttempts: env.JOB_MAX_ATTEMPTS,
      retentionMs: env.JOB_RETENTION_MS,
      storeRetentionMs: env.JOB_STORE_RETENTION_MS,
      orphanLeaseMs: env.JOB_ORPHAN_LEASE_MS,
      orphanSweepMs: env.JOB_ORPHAN_SWEEP_MS,
      logger,
    });
    shutdown.add("job store", () => jobs.close());
    const { infra, store: jobStore, reader } = jobs;
    store = jobStore;
    const { llm } = runtime;
    // Under the configuration in force when called: at admission, and again when a run starts calling the model.
    const describe = (params: ScreeningJobParams, criteria: ScreeningCriterion[], questions: string[]) =>
      screeningProvenance({ params, criteria, questions, config: runtime.config(), provider: llm.provider, version: runtime.version });
    const worker = new JobWorker({
      infra,
      store: jobStore,
      sealer,
      logger,
      instance: runtime.instance,
      concurrency: env.JOB_CONCURRENCY,
      handler: (job) =>
        runScreeningPipeline(
          job,
          (frame, params) =>
            params.mock
              ? createMockModel(frame)
              : createLiveModel({
                  llm,
                  frame,
                  providerKey: job.providerKey,
                  signal: job.signal,
                  config: runtime.config(),
                  reasoningAbstractChars: env.SCREENING_REASONING_ABSTRACT_CHARS,
                }),
          pipeline,
          (frame, params) => describe(params, frame.criteria, frame.questions),
        ),
    });
    worker.start();
    // Steps run in reverse order: the operations drain first, then running jobs are handed back, then NATS closes.
    shutdown.add("job worker", () => worker.stop());
    return screeningHandlers({
      infra,
      store: jobStore,
      reader,
      sealer,
      logger,
      orphanLeaseMs: env.JOB_ORPHAN_LEASE_MS,
      pipeline,
      chooseModel: (requested) => runtime.model(requested, DEFAULT_MODEL.screening),
      aliases: () => llm.modelAliases,
      describe,
      provider: () => ({ ignoresN: llm.ignoresN }),
    });
  },
});
