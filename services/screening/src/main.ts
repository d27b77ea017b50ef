import { DEFAULT_MODEL, type ScreeningCriterion, type ScreeningJobParams } from "@litrev/contracts";
import { KeySealer, serveJobKind, type JobStore } from "@litrev/jobs";
import { duringStartUp } from "@litrev/messaging";
import { startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { screeningJobKind } from "./job-kind";
import { createLiveModel } from "./model/live-model";
import { createMockModel } from "./model/mock-model";
import type { PipelineSettings } from "./pipeline/run";
import { runScreeningPipeline } from "./pipeline/run";
import { PREAMBLE, PROMPT_LIST } from "./prompts";
import { screeningProvenance } from "./provenance";
import { validationSampleHandlers } from "./validation/handlers";
import { SampleStore } from "./validation/sample-store";

const env = loadEnv();
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
/** How long an estimate may wait for the probe of the provider's `n` (its NATS request allows more). */
const ESTIMATE_PROBE_DEADLINE_MS = 5_000;

await startService({
  service: "screening",
  env,
  sealer: KeySealer.fromEnv(env),
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
    const { llm } = runtime;
    // Under the configuration in force when called: at admission, and again when a run starts calling the model.
    const describe = (params: ScreeningJobParams, criteria: ScreeningCriterion[], questions: string[]) =>
      screeningProvenance({ params, criteria, questions, config: runtime.config(), provider: llm.provider, version: runtime.version });
    const kind = screeningJobKind({
      pipeline,
      describe,
      provider: () => ({ ignoresN: llm.ignoresN, declared: llm.declaresN }),
      // With the server's key, under a short deadline: an estimate is a quick answer (a failed probe leaves the assumption as it was).
      probeProvider: async (model) => {
        if (llm.hasDefaultKey) await llm.probeN({ model, deadlineMs: ESTIMATE_PROBE_DEADLINE_MS });
      },
      run: (job) =>
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
    const served = await serveJobKind(runtime, env, kind);
    store = served.jobs.store;
    const samples = await duringStartUp("validation bucket", () => SampleStore.open(runtime.nc, env.JOB_STORE_RETENTION_MS), runtime.logger);
    return [...served.handlers, ...validationSampleHandlers(served.jobs.reader, samples, { storage: served.storage, keptForMs: env.JOB_STORE_RETENTION_MS })];
  },
});
