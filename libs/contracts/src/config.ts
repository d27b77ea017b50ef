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

export const ServiceConfigPatch = z.object({
  model: z.string().min(1).max(200).optional(),
  system_prompt: z.string().max(100_000).optional(),
  prompt_template_id: z.string().max(200).optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_output_tokens: z.number().int().min(1).max(1_000_000).optional(),
  extra: JsonObject.optional(),
});
export type ServiceConfigPatch = z.infer<typeof ServiceConfigPatch>;

export const ServiceIdParams = z.object({ service_id: ConfigServiceId });

export const PromptMetadata = z.object({
  name: z.string(),
  service: z.enum(["screening", "criteria", "indexer"]),
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

/** A patch applied over a config; `extra` merges key by key. */
export function applyConfigPatch(base: ServiceConfigResponse, patch: ServiceConfigPatch): ServiceConfigResponse {
  const { extra, ...rest } = patch;
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  return { ...base, ...defined, extra: { ...base.extra, ...(extra ?? {}) } };
}
