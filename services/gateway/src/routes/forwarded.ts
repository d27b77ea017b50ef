import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { type Operation, forwardedRoutes as routes, operations, headers, providerKeyUse } from "@litrev/contracts";
import { callOperation, KeySealer } from "@litrev/messaging";
import type { GatewayDeps } from "../app";
import { jobRouteHandlers, ownerOf } from "../jobs/job-routes";

/**
 * Every spec route owned by a backend service: validate here, then one NATS request to its owner —
 * or, for the job routes that the gateway answers itself where it can, the job-aware handler.
 * Summaries, tags and error statuses come from the operations table (openapi.ts applies them).
 */
export function forwardedRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (app) => {
    const jobs = jobRouteHandlers(deps);
    // Provider keys cross NATS only sealed, each for its one request (job creations seal per job).
    const sealer = KeySealer.fromEnv(deps.env);
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
        handler: jobHandler ?? (async (request: FastifyRequest) => {
          const input =
            route.input === "body"
              ? request.body
              : { ...(request.params as object), ...(request.query as object) };
          return callOperation(deps.link, operation, input, {
            requestId: request.id,
            // Only operations that call the provider get the key at all (not listings or estimates).
            providerKey: providerKeyUse(operation) === "request" ? providerKeyOf(request) : undefined,
            sealer,
            timeoutMs: route.method === "GET" ? deps.env.READ_TIMEOUT_MS : deps.env.RPC_TIMEOUT_MS,
            // Whose request it is: job listings show that client's jobs only.
            headers: { [headers.owner]: ownerOf(request) },
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
