import { DEFAULT_MODEL } from "@litrev/contracts";
import { LlmClient } from "@litrev/llm";
import { llmOptions, startService } from "@litrev/runtime";
import { loadEnv } from "./env";
import { criteriaHandlers } from "./handlers";
import { liveCriteria } from "./live";
import { PREAMBLE, PROMPT_LIST } from "./prompts";

const env = loadEnv();

await startService({
  service: "criteria",
  env,
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
  handlers: (runtime) =>
    criteriaHandlers(liveCriteria(new LlmClient({ ...llmOptions(env), logger: runtime.logger }), runtime)),
});
