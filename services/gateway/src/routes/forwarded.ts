import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerHookHandler, preValidationHookHandler } from "fastify";
import { z } from "zod";
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
import { RecallCertificates } from "@litrev/jobs/client";
import { callOperation, KeySealer } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import { jobEventRoutes } from "../jobs/job-events";
import { validationRoutes } from "../jobs/validation-route";
import { jobExportRoutes } from "../jobs/export-routes";
import { jobRouteHandlers, ownerOf } from "../jobs/job-routes";
import { modelGuardFor, type ModelGuard } from "../model-guard";
import { providerKeyOf } from "../auth";

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
    const models = modelGuardFor(deps);
    app.addHook("onClose", () => jobs.close());
    await app.register(jobEventRoutes(deps, jobs.live, jobs.polls));
    await app.register(jobExportRoutes(jobs.polls, new RecallCertificates(() => deps.link.connection())));
    for (const route of routes) {
      const operation: Operation = operations[route.operation];
      const jobHandler = jobs.handlers.get(operation);
      app.route({
        method: route.method,
        url: route.path,
        // The body parser hands a large body of this operation to its thread (off-loop-parse.ts).
        config: { operation: route.operation },
        schema: {
          ...(route.input === "body" ? { body: operation.request } : {}),
          ...(route.params ? { params: route.params } : {}),
          ...(route.query ? { querystring: route.query } : {}),
          response: route.status === 204 ? { 204: z.null().describe("Deleted: later reads of the job answer 404") } : { 200: operation.response },
        },
        // Polls and active-job reads have nothing to bound: no hook on the hot path.
        ...(route.input === "body" || route.query?.shape.limit ? { preValidation: limitsCheck(route, deps.env) } : {}),
        ...(route.params?.shape.job_id ? { preHandler: knownJobId } : {}),
        // After validation, so the contract's default model is filled in and checked too.
        ...(route.input === "body" ? { preHandler: (request: FastifyRequest) => checkModel(models, request.body) } : {}),
        handler: jobHandler ?? (async (request: FastifyRequest, reply: FastifyReply) => {
          const input =
            route.input === "body"
              ? request.body
              : { ...(request.params as object), ...(request.query as object) };
          // Provider-backed calls stop spending when nobody is left to read the answer.
          const signal = route.method === "POST" ? clientGone(reply) : undefined;
          try {
            return await callOperation(deps.link, operation, input, {
              requestId: request.id,
              // Only operations that call the provider get the key at all (not listings or estimates).
              providerKey: providerKeyUse(operation) === "request" ? providerKeyOf(request) : undefined,
              sealer,
              timeoutMs: route.method === "GET" ? deps.env.READ_TIMEOUT_MS : deps.env.RPC_TIMEOUT_MS,
              // Whose request it is: job listings show that client's jobs only.
              headers: { [headers.owner]: ownerOf(request) },
              ...(signal ? { signal } : {}),
            });
          } catch (error) {
            if (!signal?.aborted) throw error;
            request.log.info({ operation: operation.name }, "client disconnected; request cancelled");
            return reply.hijack(); // the socket is gone: nothing to send
          }
        }),
      });
    }
    // Reads the job through the same poll reader as the poll route (registered last, as before).
    await app.register(validationRoutes(deps, jobs.polls));
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

/** Fires when the client disconnects before its response was sent. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(new ClientGoneError());
  });
  return controller.signal;
}

/** The HTTP client went away; there is no one to answer. */
class ClientGoneError extends Error {
  override readonly name = "AbortError";
  constructor() {
    super("The client disconnected before the answer was ready");
  }
}

/** A body's `model` (every provider-backed request has one) against the deployment's allowlist. */
async function checkModel(models: ModelGuard, body: unknown): Promise<void> {
  const model = (body as { model?: unknown } | null)?.model;
  if (typeof model === "string") await models.check(model);
}
