import type { FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerHookHandler, preValidationHookHandler } from "fastify";
import { z } from "zod";
import { type ForwardedRoute, forwardedRoutes as routes, headers, isJobId, jobNotFound, listLimitIssues, type RequestLimits, ServiceError, jsonRecord } from "@litrev/contracts";
import { callOperation, KeySealer } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import { ownerOf } from "../jobs/owner";
import { modelGuardFor } from "../model-guard";
import { providerKeyOf } from "../auth";
import type { ZodApp } from "../validation";
import type { ZodTypeProvider } from "fastify-type-provider-zod";

/** A route's own answer in place of one NATS request to its owner (the job routes the gateway answers itself where it can). */
export type ForwardedHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * Every spec route owned by a backend service: validate here, then one NATS request to its owner —
 * or the route's own handler. Summaries, tags and error statuses come from the operations table
 * (openapi.ts applies them). Returns the registrar the job routes use too (jobs/job-routes.ts).
 */
export function forwarder(deps: GatewayDeps): (app: ZodApp, route: ForwardedRoute, handler?: ForwardedHandler) => void {
  // Provider keys cross NATS only sealed, each for its one request (job creations seal per job).
  const sealer = KeySealer.fromEnv(deps.env);
  const models = modelGuardFor(deps);

  const forward = async (route: ForwardedRoute, request: FastifyRequest, reply: FastifyReply) => {
    const { operation } = route;
    const input = route.input === "body" ? request.body : { ...jsonRecord(request.body), ...jsonRecord(request.params), ...jsonRecord(request.query) };
    // Provider-backed calls stop spending when nobody is left to read the answer.
    const signal = route.method === "POST" ? clientGone(reply) : undefined;
    try {
      return await callOperation(deps.link, operation, input, {
        requestId: request.id,
        // Only operations that call the provider get the key at all (not listings or estimates).
        providerKey: operation.providerKey === "request" ? providerKeyOf(request) : undefined,
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
  };

  return (app, route, handler) => {
    const hasBody = route.input !== "params+query";
    app.route({
      method: route.method,
      url: route.path,
      // The body parser hands a large body of this route to its thread (off-loop-parse.ts).
      config: { operation: route.key },
      schema: {
        ...(hasBody ? { body: route.body ?? route.operation.request } : {}),
        ...(route.params ? { params: route.params } : {}),
        ...(route.query ? { querystring: route.query } : {}),
        response: route.status === 204 ? { 204: z.null().describe("Deleted: later reads of the job answer 404") } : { 200: route.operation.response },
      },
      // Polls and active-job reads have nothing to bound: no hook on the hot path.
      ...(hasBody || route.query?.shape.limit ? { preValidation: limitsCheck(route, deps.env) } : {}),
      ...(route.params?.shape.job_id ? { preHandler: knownJobId } : {}),
      // After validation, so the contract's default model is filled in and checked too.
      ...(route.input === "body" ? { preHandler: async (request: FastifyRequest) => checkModel(models, request.body) } : {}),
      handler: handler ?? ((request, reply) => forward(route, request, reply)),
    });
  };
}

/** The forwarded routes that are no job kind's own (criteria, the indexer's synchronous calls, validation samples). */
export function forwardedRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (untyped) => {
    const app = untyped.withTypeProvider<ZodTypeProvider>();
    const route = forwarder(deps);
    for (const forwarded of routes()) if (!forwarded.kind) route(app, forwarded);
  };
}

/**
 * The deployment's configured bounds (docs/limits.md), checked on the raw input before the schema
 * parses it: an oversized request is refused before it costs more than its JSON parse.
 */
function limitsCheck(route: ForwardedRoute, limits: RequestLimits): preValidationHookHandler {
  return (request, _reply, done) => {
    const issues = route.input === "params+query" ? listLimitIssues(request.query, limits) : (route.limits?.(jsonRecord(request.body), limits) ?? []);
    done(issues.length > 0 ? new ServiceError("validation", "Request validation failed", { issues }) : undefined);
  };
}

/** Job ids are UUIDs: any other id is unknown, answered here without a lookup (a malformed one could not be looked up). */
const knownJobId: preHandlerHookHandler = (request, _reply, done) => {
  const jobId = jsonRecord(request.params).job_id;
  done(typeof jobId === "string" && isJobId(jobId) ? undefined : jobNotFound());
};

/** Fires when the client disconnects before its response was sent. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(new DOMException("The client disconnected before the answer was ready", "AbortError"));
  });
  return controller.signal;
}

/** A body's `model` (every provider-backed request has one) against the deployment's allowlist. */
async function checkModel(models: ReturnType<typeof modelGuardFor>, body: unknown): Promise<void> {
  const model = jsonRecord(body).model;
  if (typeof model === "string") await models.check(model);
}
