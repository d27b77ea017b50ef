import { configServiceId, DEFAULT_MODEL, type IndexerField } from "@litrev/contracts";
import { KeySealer, serveJobKind } from "@litrev/jobs";
import { startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { indexerHandlers } from "./handlers";
import { indexerJobKind } from "./jobs/job-kind";
import { indexerProvenance } from "./jobs/provenance";
import { indexerJobHandler } from "./jobs/run-job";
import type { ExtractionPlan } from "./pipeline/extract-record";
import { PREAMBLE, PROMPT_LIST } from "./prompts";

const env = loadEnv();
let databaseStatus = () => "error: not connected yet";
let storeDescription = () => "not connected yet";

await startService({
  service: "indexer",
  env,
  sealer: KeySealer.fromEnv(env),
  defaults: {
    service_id: configServiceId("indexer"),
    model: DEFAULT_MODEL.indexerRun,
    system_prompt: PREAMBLE,
    prompt_template_id: "indexer.extraction",
    // Extraction wants the most literal reading; reasoning models ignore it (they only accept 1).
    temperature: 0,
    max_output_tokens: 4096,
    extra: { reasoning_effort: "low" },
  },
  prompts: PROMPT_LIST,
  models: [DEFAULT_MODEL.indexerRun, DEFAULT_MODEL.indexerSuggestFields],
  databaseStatus: () => databaseStatus(),
  storeDescription: () => storeDescription(),
  handlers: async (runtime) => {
    const { llm } = runtime;
    // Under the configuration in force when called: at admission, and again when a run starts calling the model.
    const describe = (input: { model: string; resolved: string; fields: IndexerField[]; plan: ExtractionPlan }) =>
      indexerProvenance({ ...input, config: runtime.config(), provider: llm.provider, version: runtime.version });
    const kind = indexerJobKind({
      config: runtime.config,
      describe,
      run: indexerJobHandler({ llm, config: runtime.config, concurrency: env.INDEXER_JOB_RECORD_CONCURRENCY, describe }),
    });
    const { handlers, jobs } = await serveJobKind(runtime, env, kind);
    databaseStatus = () => jobs.store.status();
    storeDescription = () => jobs.store.describe();
    return [...indexerHandlers({ runtime, llm, runBudgetMs: env.INDEXER_RUN_BUDGET_MS }), ...handlers];
  },
});
