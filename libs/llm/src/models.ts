import { z } from "zod";
import { MODEL } from "@litrev/contracts";

/**
 * The spec names models by alias (`llm-5-nano`, ...) so that a deployment can point them at
 * any OpenAI-compatible model (a vLLM or Ollama model, a dated snapshot) without code changes.
 */
export const DEFAULT_MODEL_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  [MODEL.nano]: "gpt-5-nano",
  [MODEL.mini]: "gpt-5-mini",
  [MODEL.large]: "gpt-4.1",
});

const AliasOverrides = z.record(z.string().min(1), z.string().min(1));

/**
 * `LLM_MODEL_ALIASES`: a JSON object of alias overrides. A malformed value is an error, never
 * ignored: that would send traffic to a model the operator did not choose. Services extend their
 * env schema with this one, so a bad value stops start-up.
 */
export const ModelAliasesEnv = z.object({
  LLM_MODEL_ALIASES: z
    .string()
    .trim()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        ctx.addIssue({ code: "custom", message: 'LLM_MODEL_ALIASES is not valid JSON: expected an object such as {"llm-5-nano":"my-model"}' });
        return z.NEVER;
      }
      const result = AliasOverrides.safeParse(parsed);
      if (!result.success) {
        ctx.addIssue({ code: "custom", message: "LLM_MODEL_ALIASES must be a JSON object mapping alias names to non-empty model names" });
        return z.NEVER;
      }
      return result.data;
    }),
});
export type ModelAliasesEnv = z.infer<typeof ModelAliasesEnv>;

let cachedEnvValue: string | undefined;
let cachedAliases: Readonly<Record<string, string>> = DEFAULT_MODEL_ALIASES;

/** Built-in aliases merged with `LLM_MODEL_ALIASES`; a malformed value throws with the reason. */
export function loadModelAliases(env: NodeJS.ProcessEnv = process.env): Readonly<Record<string, string>> {
  const raw = env.LLM_MODEL_ALIASES?.trim();
  if (!raw) return DEFAULT_MODEL_ALIASES;
  if (raw === cachedEnvValue) return cachedAliases;
  const result = ModelAliasesEnv.safeParse({ LLM_MODEL_ALIASES: raw });
  if (!result.success) throw new Error(result.error.issues[0]?.message ?? "LLM_MODEL_ALIASES is invalid");
  cachedEnvValue = raw;
  cachedAliases = Object.freeze({ ...DEFAULT_MODEL_ALIASES, ...result.data.LLM_MODEL_ALIASES });
  return cachedAliases;
}

/** The provider model for an alias; any other name passes through unchanged. */
export function resolveModel(modelOrAlias: string, aliases: Readonly<Record<string, string>> = loadModelAliases()): string {
  return Object.hasOwn(aliases, modelOrAlias) ? (aliases[modelOrAlias] as string) : modelOrAlias;
}

/** `openai/gpt-5-nano` (LiteLLM / router style) → `gpt-5-nano`, for family and price look-ups. */
export function baseModelName(model: string): string {
  const slash = model.lastIndexOf("/");
  return (slash >= 0 ? model.slice(slash + 1) : model).toLowerCase();
}

/**
 * GPT-5 and o-series models reason before answering: they reject `temperature` other than 1
 * and `max_tokens`, and bill reasoning tokens as output (field notes, "OpenAI-compatible providers").
 */
export function isReasoningModel(model: string): boolean {
  const name = baseModelName(model);
  return name.startsWith("gpt-5") || /^o\d/.test(name);
}

export type ReasoningEffort = "minimal" | "low" | "medium" | "high";

export interface GenerationSettings {
  temperature?: number | undefined;
  maxOutputTokens?: number | undefined;
  reasoningEffort?: ReasoningEffort | undefined;
}

/** The model-specific part of a Chat Completions request body. */
export interface ModelRequestParams {
  temperature?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  reasoning_effort?: ReasoningEffort;
}

/**
 * Translates generation settings into the fields this model family accepts. Settings a family
 * does not support are dropped rather than sent, because the provider answers them with a 400.
 */
export function modelRequestParams(model: string, settings: GenerationSettings): ModelRequestParams {
  const params: ModelRequestParams = {};
  if (isReasoningModel(model)) {
    // Only the default temperature (1) is accepted, so never send one.
    if (settings.maxOutputTokens !== undefined) params.max_completion_tokens = settings.maxOutputTokens;
    if (settings.reasoningEffort !== undefined) params.reasoning_effort = settings.reasoningEffort;
    return params;
  }
  if (settings.temperature !== undefined) params.temperature = settings.temperature;
  // `max_tokens` is the field every OpenAI-compatible server (vLLM, Ollama, LiteLLM) understands.
  if (settings.maxOutputTokens !== undefined) params.max_tokens = settings.maxOutputTokens;
  return params;
}

/**
 * The sampling settings a call to `model` actually sends (null: not sent, so the provider's
 * default applies), in the shape a job's provenance records per stage.
 */
export function sentParameters(model: string, settings: GenerationSettings) {
  const params = modelRequestParams(model, settings);
  return {
    temperature: params.temperature ?? null,
    max_output_tokens: params.max_completion_tokens ?? params.max_tokens ?? null,
    reasoning_effort: params.reasoning_effort ?? null,
  };
}

/**
 * The model a request uses, by the documented precedence: the request's own `model` → the
 * service configuration's `model` → the spec's default for the operation. The contract fills
 * the spec's default at the edge, so a request naming exactly that default counts as "not
 * given". The service configuration counts only when it differs from what the service
 * announced, because one service-wide `model` cannot express an operation's own default (criteria's
 * analyze-question defaults to `llm-5-mini`, its other endpoints to `llm-4.1`). Aliases are
 * resolved later, by the client, against the live alias table.
 */
export function chooseModel(choice: { requested: string; specDefault: string; configured: string; announced: string }): string {
  if (choice.requested !== choice.specDefault) return choice.requested;
  if (choice.configured && choice.configured !== choice.announced) return choice.configured;
  return choice.specDefault;
}
