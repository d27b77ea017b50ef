import { CONFIG_SERVICE_ID, DEFAULT_MODEL } from "@litrev/contracts";
import { KeySealer } from "@litrev/messaging";
import { startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { indexerHandlers } from "./handlers";
import { startIndexerJobs } from "./jobs/wiring";
import { PREAMBLE, PROMPT_LIST } from "./prompts";

const env = loadEnv();
let databaseStatus = () => "error: not connected yet";
let storeDescription = () => "not connected yet";

await startService({
  service: "indexer",
  env,
  sealer: KeySealer.fromEnv(env),
  defaults: {
    service_id: CONFIG_SERVICE_ID.indexer,
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
    const jobs = await startIndexerJobs(runtime, env, llm);
    databaseStatus = () => jobs.store.status();
    storeDescription = () => jobs.store.describe();
    return [...indexerHandlers({ runtime, llm, runBudgetMs: env.INDEXER_RUN_BUDGET_MS }), ...jobs.handlers];
  },
});
