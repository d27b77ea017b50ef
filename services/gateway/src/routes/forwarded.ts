import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { type Operation, forwardedRoutes as routes, operations, headers } from "@litrev/contracts";
import { callOperation } from "@litrev/messaging";
import type { GatewayDeps } from "../app";
import { jobRouteHandlers } from "../jobs/job-routes";
import { modelGuardFor, type ModelGuard } from "../model-guard";

/**
 * Every spec route owned by a backend service: validate here, then one NATS request to its owner —
 * or, for the job routes that the gateway answers itself where it can, the job-aware handler.
 * Summaries, tags and error statuses come from the operations table (openapi.ts applies them).
 */
export function forwardedRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (app) => {
    const jobs = jobRouteHandlers(deps);
    const models = modelGuardFor(deps);
    app.addHook("onClose", () => jobs.close());
    for (const route of routes) {
      const operation: Operation = operations[route.operation];
      const jobHandler = jobs.handlers.get(operation);
      app.route({
        method: route.method,
        url: route.path,
        schema: {
          ...(route.input === "body" ? { body: operation.request } : {}),
          ...(route.params ? { params: route.params } : {}),
          ...(route.query ? { querystring: route.query } : {}),
          response: { 200: operation.response },
        },
        // After validation, so the contract's default model is filled in and checked too.
        ...(route.input === "body" ? { preHandler: (request: FastifyRequest) => checkModel(models, request.body) } : {}),
        handler: jobHandler ?? (async (request: FastifyRequest) => {
          const input =
            route.input === "body"
              ? request.body
              : { ...(request.params as object), ...(request.query as object) };
          return callOperation(deps.link, operation, input, {
            requestId: request.id,
            providerKey: providerKeyOf(request),
            timeoutMs: route.method === "GET" ? deps.env.READ_TIMEOUT_MS : deps.env.RPC_TIMEOUT_MS,
          });
        }),
      });
    }
  };
}

/** A body's `model` (every provider-backed request has one) against the deployment's allowlist. */
async function checkModel(models: ModelGuard, body: unknown): Promise<void> {
  const model = (body as { model?: unknown } | null)?.model;
  if (typeof model === "string") await models.check(model);
}

function providerKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[headers.providerKey];
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}
