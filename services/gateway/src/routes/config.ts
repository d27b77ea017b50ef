import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { loadModelAliases, priceFor } from "@litrev/llm";
import {
  JOB_SERVICES,
  configServiceId,
  configServiceIds,
  ModelAliasesPatch,
  ModelAliasesResponse,
  PromptMetadata,
  ServiceConfigPatch,
  ServiceConfigLookup,
  ServiceConfigResponse,
  ServiceIdParams,
  ServiceError,
} from "@litrev/contracts";
import type { GatewayDeps } from "../deps";
import { modelGuardFor } from "../model-guard";


/** The services' configuration ids, and a kind's name where its id differs (`indexer (= extraction)`), for messages. */
const namedIds = () => [...configServiceIds(), ...JOB_SERVICES.filter((s) => configServiceId(s) !== s).map((s) => `${s} (= ${configServiceId(s)})`)].sort().join(", ");

/**
 * The configuration id a write goes to. Only the services' ids (and their aliases) can be written:
 * nothing reads any other id, and the gateway may write no other key.
 */
function writableId(serviceId: string): string {
  const id = configServiceId(serviceId);
  if (configServiceIds().includes(id)) return id;
  // A 400, the spec's status for a bad write here (it lists no 404 for this route).
  throw new ServiceError("validation", `Unknown configuration id '${serviceId}': the known ids are ${namedIds()}`, { simple: true });
}

/**
 * A remap must point at a model with a price: estimates and cost ceilings of every job on that
 * alias depend on it. The price table is MODEL_PRICES (the same in every process).
 */
function requirePricedTargets(aliases: Record<string, string | null>, live: Record<string, string>): void {
  // A target may itself be an alias (`llm-5-mini`): priced as what it resolves to now.
  const unpriced = Object.entries(aliases).filter(([, model]) => model !== null && !priceFor(model, live).known);
  if (unpriced.length === 0) return;
  const named = unpriced.map(([alias, model]) => `'${alias}' → '${model}'`).join(", ");
  const example = Object.fromEntries(unpriced.map(([, model]) => [model, { input: 0.1, output: 0.4 }]));
  throw new ServiceError(
    "validation",
    `No price is configured for ${named}, so the cost of jobs on it could be neither estimated nor capped: ` +
      `set MODEL_PRICES in every process, e.g. ${JSON.stringify(example)} (USD per 1M tokens), then remap`,
    { simple: true },
  );
}

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
        const ids = [...new Set([...configServiceIds(), ...(await configs.serviceIds())])].sort();
        return Promise.all(ids.map((id) => configs.effective(id)));
      },
    );
    app.get(
      "/config/services/:service_id",
      { schema: { tags: ["config"], params: ServiceIdParams, response: { 200: ServiceConfigLookup } } },
      async (request) => {
        const configs = await store();
        const id = configServiceId(request.params.service_id);
        const config = await configs.effective(id);
        if (configServiceIds().includes(id) || (await configs.serviceIds()).includes(id)) return config;
        // The spec answers an unknown id with a default config; the body says that is what it is.
        return { ...config, default_config: true as const, note: `No service has the configuration id '${id}': this is the default configuration. The known ids are ${namedIds()}` };
      },
    );
    app.put(
      "/config/services/:service_id",
      {
        schema: {
          tags: ["config"],
          description: "Changes the given fields; a field set to `null` goes back to the service's default (in `extra`, key by key).",
          params: ServiceIdParams,
          body: ServiceConfigPatch,
          response: { 200: ServiceConfigResponse },
        },
      },
      async (request) => {
        const serviceId = writableId(request.params.service_id);
        // A service's default model is held to the same allowlist as a request's `model`.
        if (request.body.model != null) await models.check(request.body.model);
        try {
          return await (await store()).patch(serviceId, request.body);
        } catch (error) {
          if (error instanceof ServiceError) throw error;
          throw new ServiceError("unknown", "Could not save the configuration", { cause: error });
        }
      },
    );
    // Not in the spec: undoes every change made to a service through PUT.
    app.delete(
      "/config/services/:service_id",
      {
        schema: {
          tags: ["config"],
          params: ServiceIdParams,
          response: { 200: ServiceConfigResponse },
        },
      },
      async (request) => {
        const serviceId = writableId(request.params.service_id);
        try {
          return await (await store()).reset(serviceId);
        } catch (error) {
          if (error instanceof ServiceError) throw error;
          throw new ServiceError("unknown", "Could not reset the configuration", { cause: error });
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
          description: "A model without a price (built-in table or `MODEL_PRICES`) is refused with a 400: estimates and cost ceilings need one.",
          body: ModelAliasesPatch,
          response: { 200: ModelAliasesResponse },
        },
      },
      async (request) => {
        const configs = await store();
        requirePricedTargets(request.body.aliases, { ...loadModelAliases(), ...(await configs.modelAliases()).aliases });
        try {
          return await configs.patchModelAliases(request.body);
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
