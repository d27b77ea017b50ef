import { DEFAULT_MODEL } from "@litrev/contracts";
import { KeySealer } from "@litrev/messaging";
import { startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { criteriaHandlers } from "./handlers";
import { liveCriteria } from "./live";
import { PREAMBLE, PROMPT_LIST } from "./prompts";

const env = loadEnv();

await startService({
  service: "criteria",
  env,
  sealer: KeySealer.fromEnv(env),
  defaults: {
    service_id: "criteria",
    model: DEFAULT_MODEL.criteria,
    system_prompt: PREAMBLE,
    prompt_template_id: "criteria.default",
    temperature: 0.2,
    max_output_tokens: 4096,
    extra: {},
  },
  prompts: PROMPT_LIST,
  models: [DEFAULT_MODEL.criteriaAnalyzeQuestion, DEFAULT_MODEL.criteria],
  handlers: (runtime) => criteriaHandlers(liveCriteria(runtime)),
});
