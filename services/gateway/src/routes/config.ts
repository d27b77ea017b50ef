import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  CONFIG_SERVICE_ID,
  ModelAliasesPatch,
  ModelAliasesResponse,
  PromptMetadata,
  ServiceConfigPatch,
  ServiceConfigResponse,
  ServiceIdParams,
  ServiceError,
} from "@litrev/contracts";
import type { GatewayDeps } from "../app";
import { modelGuardFor } from "../model-guard";

const KNOWN_IDS = Object.values(CONFIG_SERVICE_ID);

/** Configuration lives in the KV bucket; services watch it, so a PUT here applies everywhere at once. */
export function configRoutes(deps: GatewayDeps): FastifyPluginAsync {
  const store = async () => {
    deps.link.connection(); // fail fast with a retryable error while NATS is down
    return deps.configStore();
  };
  const models = modelGuardFor(deps);
  return async (untyped) => {
    // Request types come from the route schemas (the validator compiler is the gateway's own).
    const app = untyped.withTypeProvider<ZodTypeProvider>();
    app.get(
      "/config/services",
      { schema: { tags: ["config"], response: { 200: z.array(ServiceConfigResponse) } } },
      async () => {
        const configs = await store();
        const ids = [...new Set([...KNOWN_IDS, ...(await configs.serviceIds())])].sort();
        return Promise.all(ids.map((id) => configs.effective(id)));
      },
    );
    app.get(
      "/config/services/:service_id",
      { schema: { tags: ["config"], params: ServiceIdParams, response: { 200: ServiceConfigResponse } } },
      async (request) => (await store()).effective(request.params.service_id),
    );
    app.put(
      "/config/services/:service_id",
      { schema: { tags: ["config"], params: ServiceIdParams, body: ServiceConfigPatch, response: { 200: ServiceConfigResponse } } },
      async (request) => {
        const { service_id } = request.params;
        // A service's default model is held to the same allowlist as a request's `model`.
        if (request.body.model !== undefined) await models.check(request.body.model);
        try {
          return await (await store()).patch(service_id, request.body);
        } catch (error) {
          if (error instanceof ServiceError) throw error;
          throw new ServiceError("unknown", "Could not save the configuration", { cause: error });
        }
      },
    );
    // Not in the spec: the alias table (`llm-5-nano` → a provider model), live on every replica.
    app.get(
      "/config/models",
      { schema: { tags: ["config"], summary: "Model aliases in force", response: { 200: ModelAliasesResponse } } },
      async () => (await store()).modelAliases(),
    );
    app.put(
      "/config/models",
      {
        schema: {
          tags: ["config"],
          summary: "Remap model aliases without a restart (null drops an override)",
          body: ModelAliasesPatch,
          response: { 200: ModelAliasesResponse },
        },
      },
      async (request) => {
        try {
          return await (await store()).patchModelAliases(request.body);
        } catch (error) {
          if (error instanceof ServiceError) throw error;
          throw new ServiceError("unknown", "Could not save the model aliases", { cause: error });
        }
      },
    );
    app.get(
      "/config/prompts",
      { schema: { tags: ["config"], response: { 200: z.array(PromptMetadata) } } },
      async () => (await store()).prompts(),
    );
  };
}
