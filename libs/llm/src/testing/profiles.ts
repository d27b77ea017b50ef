/**
 * How common OpenAI-compatible servers differ from OpenAI, as their documentation and issue
 * trackers describe them, for the fake provider to imitate (docs/providers.md has the table and
 * what the service does about each difference). Only the differences that change cost or
 * correctness for this service are modelled: paths and auth, model names, `n`, `usage`,
 * schema enforcement, error bodies and rate-limit headers.
 */

export type ProfileName = "openai" | "azure" | "vllm" | "ollama" | "ollama-cloud" | "llamacpp" | "litellm";

export interface ProviderProfile {
  name: ProfileName;
  /** Path before `/chat/completions` and `/models` (the base URL's path). */
  basePath: string;
  /**
   * `bearer`: `Authorization: Bearer` required; `azure`: the `api-key` header or a bearer token;
   * `ignored`: any or no key is accepted (local Ollama, llama.cpp started without `--api-key`).
   */
  auth: "bearer" | "azure" | "ignored";
  /** What `GET /models` lists and chat accepts (Azure: deployment names; LiteLLM: its `model_name`s). */
  models: readonly string[];
  /** The alias table a deployment sets for this server (PUT /v1/config/models or LLM_MODEL_ALIASES). */
  aliases: Readonly<Record<string, string>>;
  /** llama.cpp serves its one loaded model whatever the request's `model` says. */
  servesAnyModel: boolean;
  /** `honoured`: n choices; `ignored`: always one choice; `rejected`: a 400 for n > 1. */
  n: "honoured" | "ignored" | "rejected";
  /** `full`: OpenAI's usage with details; `basic`: token counts only; `none`: no usage object. */
  usage: "full" | "basic" | "none";
  /**
   * `strict`: strict-mode rules are checked (an invalid schema is a 400) and replies always match;
   * `guided`: replies follow the schema (grammar-constrained), no strict-mode checks;
   * `unenforced`: json_schema is accepted but not enforced, so some replies break it.
   */
  schema: "strict" | "guided" | "unenforced";
  /** `openai`: x-ratelimit-limit/remaining/reset-*; `remaining`: remaining-* only (Azure); `none`. */
  rateLimitHeaders: "openai" | "remaining" | "none";
  /** Whether a 429 carries retry-after(-ms). */
  retryAfterHeaders: boolean;
  /** The `model` field of a reply, for the requested model. */
  replyModel(requested: string): string;
  /** The error for a model the server does not offer. */
  modelNotFound(model: string): { status: number; body: object };
  /** Reshapes an OpenAI-style error body `{error: {message, type, param, code}}` into this server's. */
  errorBody(status: number, openai: { message: string; type: string; code: string | null }): object;
}

const openaiError = (_status: number, e: { message: string; type: string; code: string | null }) => ({
  error: { message: e.message, type: e.type, param: null, code: e.code },
});

const OPENAI_MODELS = ["gpt-5-nano", "gpt-5-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4o-mini"] as const;

const base = {
  basePath: "/v1",
  auth: "bearer",
  servesAnyModel: false,
  n: "honoured",
  usage: "full",
  schema: "strict",
  rateLimitHeaders: "openai",
  retryAfterHeaders: true,
  replyModel: (requested: string) => requested,
  errorBody: openaiError,
} as const;

export const PROVIDER_PROFILES: Readonly<Record<ProfileName, ProviderProfile>> = {
  openai: {
    ...base,
    name: "openai",
    aliases: { "llm-5-nano": "gpt-5-nano", "llm-5-mini": "gpt-5-mini", "llm-4.1": "gpt-4.1" },
    models: OPENAI_MODELS,
    modelNotFound: (model) => ({
      status: 404,
      body: openaiError(404, { message: `The model \`${model}\` does not exist or you do not have access to it.`, type: "invalid_request_error", code: "model_not_found" }),
    }),
  },
  // Azure OpenAI's v1 API (https://<resource>.openai.azure.com/openai/v1): model = deployment name.
  azure: {
    ...base,
    name: "azure",
    // Deployments named after their model keep GPT-5 request fields right (models.ts decides by name).
    aliases: { "llm-5-nano": "gpt-5-nano-eu", "llm-5-mini": "gpt-5-mini-eu", "llm-4.1": "gpt-4.1-eu" },
    basePath: "/openai/v1",
    auth: "azure",
    models: ["gpt-5-nano-eu", "gpt-5-mini-eu", "gpt-4.1-eu"],
    rateLimitHeaders: "remaining",
    // Azure reports the underlying model, not the deployment.
    replyModel: (requested) => (requested.startsWith("gpt-5-nano") ? "gpt-5-nano-2025-08-07" : requested.startsWith("gpt-5-mini") ? "gpt-5-mini-2025-08-07" : "gpt-4.1-2025-04-14"),
    modelNotFound: () => ({
      status: 404,
      body: {
        error: {
          code: "DeploymentNotFound",
          message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.",
        },
      },
    }),
    errorBody: (status, e) => ({ error: { code: status === 429 ? "429" : (e.code ?? String(status)), message: e.message } }),
  },
  // vLLM: n and guided decoding supported; no rate limits; errors at the top level of the body.
  vllm: {
    ...base,
    name: "vllm",
    aliases: { "llm-5-nano": "Qwen/Qwen2.5-7B-Instruct", "llm-5-mini": "Qwen/Qwen2.5-7B-Instruct", "llm-4.1": "Qwen/Qwen2.5-7B-Instruct" },
    models: ["Qwen/Qwen2.5-7B-Instruct"],
    usage: "basic",
    schema: "guided",
    rateLimitHeaders: "none",
    retryAfterHeaders: false,
    modelNotFound: (model) => ({
      status: 404,
      body: { object: "error", message: `The model \`${model}\` does not exist.`, type: "NotFoundError", param: null, code: 404 },
    }),
    errorBody: (status, e) => ({ object: "error", message: e.message, type: status === 404 ? "NotFoundError" : "BadRequestError", param: null, code: status }),
  },
  // Local Ollama: key ignored, `n` not among the supported fields, json_schema grammar-enforced.
  ollama: {
    ...base,
    name: "ollama",
    aliases: { "llm-5-nano": "qwen2.5:7b", "llm-5-mini": "qwen2.5:7b", "llm-4.1": "llama3.1:8b" },
    auth: "ignored",
    models: ["llama3.1:8b", "qwen2.5:7b"],
    n: "ignored",
    usage: "basic",
    schema: "guided",
    rateLimitHeaders: "none",
    retryAfterHeaders: false,
    modelNotFound: (model) => ({
      status: 404,
      body: { error: { message: `model "${model}" not found, try pulling it first`, type: "api_error", param: null, code: null } },
    }),
    errorBody: (_status, e) => ({ error: { message: e.message, type: "api_error", param: null, code: null } }),
  },
  // Ollama's cloud API: accepts json_schema without enforcing it.
  "ollama-cloud": {
    ...base,
    name: "ollama-cloud",
    aliases: { "llm-5-nano": "gpt-oss:120b", "llm-5-mini": "gpt-oss:120b", "llm-4.1": "gpt-oss:120b" },
    models: ["gpt-oss:120b"],
    n: "ignored",
    usage: "basic",
    schema: "unenforced",
    rateLimitHeaders: "none",
    retryAfterHeaders: false,
    modelNotFound: (model) => ({
      status: 404,
      body: { error: { message: `model "${model}" not found`, type: "api_error", param: null, code: null } },
    }),
    errorBody: (_status, e) => ({ error: { message: e.message, type: "api_error", param: null, code: null } }),
  },
  // llama.cpp's llama-server: one loaded model whatever `model` says; n > 1 refused.
  llamacpp: {
    ...base,
    name: "llamacpp",
    aliases: { "llm-5-nano": "qwen2.5-7b-instruct-q4_k_m.gguf", "llm-5-mini": "qwen2.5-7b-instruct-q4_k_m.gguf", "llm-4.1": "qwen2.5-7b-instruct-q4_k_m.gguf" },
    auth: "ignored",
    models: ["qwen2.5-7b-instruct-q4_k_m.gguf"],
    servesAnyModel: true,
    n: "rejected",
    usage: "basic",
    schema: "guided",
    rateLimitHeaders: "none",
    retryAfterHeaders: false,
    replyModel: () => "qwen2.5-7b-instruct-q4_k_m.gguf",
    modelNotFound: (model) => ({ status: 404, body: { error: { code: 404, message: `model ${model} not found`, type: "not_found_error" } } }),
    errorBody: (status, e) => ({ error: { code: status, message: e.message, type: e.type } }),
  },
  // LiteLLM proxy: model = the proxy's model_name; upstream rate-limit headers passed on.
  litellm: {
    ...base,
    name: "litellm",
    aliases: { "llm-5-nano": "nano", "llm-5-mini": "mini", "llm-4.1": "large" },
    models: ["nano", "mini", "large"],
    replyModel: (requested) => `openai/${requested}`,
    modelNotFound: (model) => ({
      status: 400,
      body: {
        error: {
          message: `/chat/completions: Invalid model name passed in model=${model}. Call \`/v1/models\` to view available models for your key.`,
          type: "None",
          param: "None",
          code: "400",
        },
      },
    }),
    errorBody: (status, e) => ({ error: { message: `${status}: ${e.message}`, type: "None", param: "None", code: String(status) } }),
  },
};

/** What n > 1 gets from a server that refuses it (llama.cpp's wording). */
export const SINGLE_CHOICE_MESSAGE = "Only one completion choice is allowed";

/**
 * A `MODEL_PRICES` value pricing every profile's models (at gpt-5-nano's price unless given), so
 * aliases can be pointed at them: a remap to an unpriced model is refused.
 */
export function profileModelPrices(price: { input: number; output: number } = { input: 0.05, output: 0.4 }): string {
  const models = Object.values(PROVIDER_PROFILES).flatMap((profile) => profile.models);
  return JSON.stringify(Object.fromEntries(models.map((model) => [model, price])));
}
