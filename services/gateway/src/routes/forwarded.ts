import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { type Operation, forwardedRoutes as routes, operations, headers } from "@litrev/contracts";
import { callOperation } from "@litrev/messaging";
import type { GatewayDeps } from "../app";
import { jobEventRoutes } from "../jobs/job-events";
import { jobRouteHandlers } from "../jobs/job-routes";

/**
 * Every spec route owned by a backend service: validate here, then one NATS request to its owner —
 * or, for the job routes that the gateway answers itself where it can, the job-aware handler.
 * Summaries, tags and error statuses come from the operations table (openapi.ts applies them).
 */
export function forwardedRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (app) => {
    const jobs = jobRouteHandlers(deps);
    app.addHook("onClose", () => jobs.close());
    await app.register(jobEventRoutes(deps, jobs.live));
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

function providerKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[headers.providerKey];
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}
