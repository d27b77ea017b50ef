import type { FastifyPluginAsync, FastifyRequest, preHandlerHookHandler, preValidationHookHandler } from "fastify";
import {
  type ForwardedRoute,
  type Operation,
  type RequestLimits,
  forwardedRoutes as routes,
  headers,
  isJobId,
  listLimitIssues,
  operations,
  providerKeyUse,
  requestLimitIssues,
  ServiceError,
} from "@litrev/contracts";
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
        // Polls and active-job reads have nothing to bound: no hook on the hot path.
        ...(route.input === "body" || route.query?.shape.limit ? { preValidation: limitsCheck(route, deps.env) } : {}),
        ...(route.params?.shape.job_id ? { preHandler: knownJobId } : {}),
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

/**
 * The deployment's configured bounds (docs/limits.md), checked on the raw input before the schema
 * parses it: an oversized request is refused before it costs more than its JSON parse.
 */
function limitsCheck(route: ForwardedRoute, limits: RequestLimits): preValidationHookHandler {
  return (request, _reply, done) => {
    const issues = route.input === "body" ? requestLimitIssues(route.operation, request.body, limits) : listLimitIssues(request.query, limits);
    done(issues.length > 0 ? new ServiceError("validation", "Request validation failed", { issues }) : undefined);
  };
}

/** Job ids are UUIDs: any other id is unknown, answered here without a lookup (a malformed one could not be looked up). */
const knownJobId: preHandlerHookHandler = (request, _reply, done) => {
  const { job_id } = request.params as { job_id: string };
  done(isJobId(job_id) ? undefined : new ServiceError("not_found", "Job not found", { simple: true }));
};

function providerKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[headers.providerKey];
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}
