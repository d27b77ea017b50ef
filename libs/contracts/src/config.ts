import { z } from "zod";
import { JsonObject } from "./common";

/** Service ids as the configuration endpoints name them (the indexer is `extraction`). */
export const ConfigServiceId = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/);

export const ServiceConfigResponse = z.object({
  service_id: z.string(),
  model: z.string(),
  system_prompt: z.string(),
  prompt_template_id: z.string(),
  temperature: z.number(),
  max_output_tokens: z.number().int(),
  extra: JsonObject,
});
export type ServiceConfigResponse = z.infer<typeof ServiceConfigResponse>;

/**
 * GET of one configuration id. An id no service has still answers a default configuration (the
 * spec's rule), and says so: `default_config` is true and `note` names the id (fields added to the spec's).
 */
export const ServiceConfigLookup = ServiceConfigResponse.extend({
  default_config: z.literal(true).optional().describe("Present when no service has this id: the body is the default configuration, not a service's"),
  note: z.string().optional(),
});

/** A change to a service's configuration: a field set to `null` goes back to the service's default. */
export const ServiceConfigPatch = z.object({
  model: z.string().min(1).max(200).nullish(),
  system_prompt: z.string().max(100_000).nullish(),
  prompt_template_id: z.string().max(200).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  max_output_tokens: z.number().int().min(1).max(1_000_000).nullish(),
  /** Merged key by key; `null` drops every `extra` override. */
  extra: JsonObject.nullish(),
});
export type ServiceConfigPatch = z.infer<typeof ServiceConfigPatch>;

export const ServiceIdParams = z.object({ service_id: ConfigServiceId });

export const PromptMetadata = z.object({
  name: z.string(),
  /** The backend service the prompt belongs to. */
  service: z.string(),
  description: z.string(),
  has_variables: z.boolean(),
  system_or_user: z.enum(["system", "user", "both"]),
});
export type PromptMetadata = z.infer<typeof PromptMetadata>;

/** What a service announces about itself in the config bucket at start-up. */
export const ServiceDefaults = z.object({
  config: ServiceConfigResponse,
  prompts: z.array(PromptMetadata),
});
export type ServiceDefaults = z.infer<typeof ServiceDefaults>;

/** The config an id gets before anyone has announced or patched it (spec: unknown id → default, not 404). */
export function defaultServiceConfig(serviceId: string): ServiceConfigResponse {
  return {
    service_id: serviceId,
    model: "llm-4.1",
    system_prompt: "",
    prompt_template_id: "",
    temperature: 0,
    max_output_tokens: 4096,
    extra: {},
  };
}

/** A patch applied over a config; `extra` merges key by key; null fields keep the base's value. */
export function applyConfigPatch(base: ServiceConfigResponse, patch: ServiceConfigPatch): ServiceConfigResponse {
  const { extra, ...rest } = patch;
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined && v !== null));
  return { ...base, ...defined, extra: { ...base.extra, ...(extra ?? {}) } };
}

/** What a service learned of its provider's `n` (config bucket, `provider.n.<id>`), for the host it was learned on. */
export const LearnedProviderN = z.object({ n: z.literal("ignored"), host: z.string().max(300), learned_at: z.string().max(40) });
export type LearnedProviderN = z.infer<typeof LearnedProviderN>;

/** Keys of the model-alias table in the config bucket (outside the `defaults.`/`overrides.` service keys). */
export const MODEL_ALIAS_KEYS = {
  /**
   * A service's built-in aliases merged with its LLM_MODEL_ALIASES, announced at start-up under its
   * own key: NATS lets each service write only its own (docs/security.md § NATS).
   */
  defaultsOf: (serviceId: string) => `aliases.defaults.${serviceId}`,
  /** Every service's announced defaults. */
  allDefaults: "aliases.defaults.*",
  /** What operators changed through PUT /v1/config/models. */
  overrides: "aliases.overrides",
} as const;

const ModelName = z.string().min(1).max(200);
export const ModelAliasTable = z.record(ModelName, ModelName);
export type ModelAliasTable = z.infer<typeof ModelAliasTable>;

/** GET/PUT /v1/config/models: the alias table in force, and where each entry comes from. */
export const ModelAliasesResponse = z.object({
  /** What every service resolves an alias to now. */
  aliases: ModelAliasTable,
  /** Built-in and environment aliases (LLM_MODEL_ALIASES), as the services announced them. */
  defaults: ModelAliasTable,
  /** Changes made through this API; they win over `defaults`. */
  overrides: ModelAliasTable,
});
export type ModelAliasesResponse = z.infer<typeof ModelAliasesResponse>;

/** PUT /v1/config/models: set an alias to a model, or `null` to drop the override. */
export const ModelAliasesPatch = z.object({
  aliases: z.record(ModelName, ModelName.nullable()).refine((table) => Object.keys(table).length <= 100, "at most 100 aliases per request"),
});
export type ModelAliasesPatch = z.infer<typeof ModelAliasesPatch>;
