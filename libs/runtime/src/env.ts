import { z } from "zod";
import { loadModelPrices, ModelAliasesEnv } from "@litrev/llm";
import { NatsAuthEnv, NatsQuotaEnv } from "@litrev/messaging";
import { EXIT_CONFIG } from "@litrev/telemetry/exit-codes";

/** Settings every process reads; each process extends this with its own. */
export const BaseEnv = z.object({
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  /** JetStream copies of every stream and bucket: 1 on one host, 3 on a cluster. */
  NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MONGO_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, "must be a mongodb:// or mongodb+srv:// URL").optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  /**
   * Model names clients may use besides the live aliases and the models they point at
   * (comma-separated); anything else is a 400 naming what is allowed (docs/security.md).
   */
  ALLOWED_MODELS: z
    .string()
    .default("")
    .transform((v) => [...new Set(v.split(",").map((m) => m.trim()).filter(Boolean))]),
  /** Prices of models the built-in table lacks, JSON, USD per 1M tokens (docs/providers.md); read by libs/llm. */
  MODEL_PRICES: z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      try {
        loadModelPrices({ MODEL_PRICES: value });
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  /** The git commit a job's provenance names (an image without .git); default: `git rev-parse HEAD` at start, else none. */
  SERVICE_COMMIT: z.string().max(64).optional(),
  /**
   * The secret the provider budgets' ids in NATS are keyed with (docs/security.md § NATS), the same in
   * every service of a deployment. Unset: derived from the sealing JOB_KEY_SECRET.
   */
  LLM_BUDGET_SECRET: z.string().min(16, "LLM_BUDGET_SECRET must be at least 16 characters").optional(),
  /** Provider calls in flight per key, per process (libs/llm limiter). */
  LLM_CONCURRENCY: z.coerce.number().int().min(1).max(1024).optional(),
  /** Fixed pace for providers that send no rate-limit headers. */
  LLM_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).optional(),
  /** HTTP attempts per provider call, the first included. */
  LLM_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).optional(),
  /** How long a job's provider call waits out the provider's rate limit before the job fails (default 1 h). */
  LLM_RATE_LIMIT_WAIT_MS: z.coerce.number().int().min(1_000).optional(),
  /** Budget for one provider call including retries and repairs. */
  LLM_DEADLINE_MS: z.coerce.number().int().min(100).optional(),
  /** The same budget for a synchronous endpoint's call (default 15 s); a 429 outlasting it is answered as a 429. */
  LLM_SYNC_DEADLINE_MS: z.coerce.number().int().min(100).optional(),
  /**
   * What the provider does with `n` > 1: `honoured` or `ignored` (Ollama, llama.cpp: one choice per
   * request). Unset: learned from its replies. Screening estimates and cost ceilings follow it.
   */
  LLM_PROVIDER_N: z.enum(["honoured", "ignored"]).optional(),
  /** How often each service lists the provider's models for /health/ready (GET /models). */
  LLM_MODEL_CHECK_INTERVAL_MS: z.coerce.number().int().min(1000).default(600_000),
  /** How long a graceful shutdown may take before the process exits anyway. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
})
  // NATS credentials and TLS (NATS_USER, NATS_PASSWORD, NATS_TLS_CA_FILE) and storage quotas (NATS_QUOTA_*_MB).
  .extend(NatsAuthEnv.shape)
  // The initial model alias table (libs/llm reads it; checked here so a bad value stops start-up).
  .extend(ModelAliasesEnv.shape)
  .extend(NatsQuotaEnv.shape);
export type BaseEnv = z.infer<typeof BaseEnv>;

/**
 * Parses the environment once at start-up. An invalid value stops the process with a message
 * naming the variable, rather than failing later in some request.
 */
export function parseEnv<S extends z.ZodType>(schema: S, source: NodeJS.ProcessEnv = process.env): z.output<S> {
  // Empty variables mean "unset", as in most shells' `VAR= cmd`.
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.join(".") || "(env)"}: ${issue.message}`);
  process.stderr.write(`Invalid configuration in the environment:\n${lines.join("\n")}\n`);
  process.exit(EXIT_CONFIG);
}

/** LlmClient options from the environment (shared by every provider-backed service). */
export function llmOptions(env: BaseEnv) {
  return {
    apiKey: env.OPENAI_API_KEY,
    baseURL: env.OPENAI_BASE_URL,
    concurrency: env.LLM_CONCURRENCY,
    requestsPerMinute: env.LLM_REQUESTS_PER_MINUTE,
    maxAttempts: env.LLM_MAX_ATTEMPTS,
    rateLimitWaitMs: env.LLM_RATE_LIMIT_WAIT_MS,
    deadlineMs: env.LLM_DEADLINE_MS,
    interactiveDeadlineMs: env.LLM_SYNC_DEADLINE_MS,
    allowedModels: env.ALLOWED_MODELS,
    providerN: env.LLM_PROVIDER_N,
    modelAliases: env.LLM_MODEL_ALIASES,
  };
}
