import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { RequestLimits, ServiceError } from "@litrev/contracts";
import { metrics } from "@litrev/telemetry";
import { createKeyring, presentedKey, type Principal } from "./auth";
import type { GatewayDeps } from "./deps";
import { serviceKeys } from "./env";
import { toHttp } from "./http-errors";
import { OffLoopParser } from "./off-loop-parse";
import { bodyLimitBytes, BodyTooLarge, bodyTooLarge, discardsRest, jsonBodyParser, jsonInvalid } from "./body-parser";
import { registerOpenApi } from "./openapi";
import { traceRoutes } from "./tracing";
import { consoleRoutes } from "./console/console-routes";
import { configRoutes } from "./routes/config";
import { forwardedRoutes } from "./routes/forwarded";
import { jobRoutes } from "./jobs/job-routes";
import { healthRoutes } from "./routes/health";
import { KeyLimiter, keyUse } from "./key-limits";
import { sharedLimits } from "./shared-limits";
import { jsonSerializerCompiler, zodValidatorCompiler } from "./validation";

declare module "fastify" {
  interface FastifyRequest {
    /** Whose service key the request carries (null on the open routes). */
    principal: Principal | null;
    /**
     * Counts a read that turned out heavy once its answer was known (a large finished job's poll)
     * against its owner's limits like an export; throws the 429 when over them (docs/limits.md).
     */
    countHeavyRead(reply: FastifyReply): Promise<void>;
    /** Gives the request's place under its owner's limits back (once); null when it holds none. */
    givePlaceBack: (() => Promise<void>) | null;
  }
  interface FastifyContextConfig {
    /** The forwarded operation a route serves (`operations` in @litrev/contracts), for the body parser thread. */
    operation?: string;
  }
}

export type { GatewayDeps } from "./deps";

/** Paths served without a service key: the spec's two health routes, `/` (a redirect), the console's static files, and the docs when DOCS_PUBLIC is set. */
const HEALTH = [/^\/health(\/ready)?$/];
/** `GET /` only redirects to the docs (which keep their own rule). */
const ROOT = [/^\/$/];
const DOCS = [/^\/docs(\/|$)/, /^\/openapi\.json$/];
/** The console's static files hold no data (its API calls carry the key), so they load without one. */
const CONSOLE = [/^\/console(\/[\w.-]*)?$/, /^\/favicon\.ico$/];

/**
 * `/v1/x` and `/x` are the same route (spec, Versioning). One route table under `/v1` keeps the
 * OpenAPI document canonical; unprefixed URLs are rewritten onto it. Health is canonical
 * without the prefix, as the spec writes it.
 */
export function rewriteUrl(url: string): string {
  if (url.startsWith("/v1/health")) return url.slice(3);
  if (url === "/" || url.startsWith("/?")) return url;
  if (url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?")) return url;
  if (/^\/(health|docs|openapi\.json|console|favicon\.ico)(\/|\?|$)/.test(url)) return url;
  return `/v1${url}`;
}

export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const { env } = deps;
  const bodyLimit = bodyLimitBytes(env);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit,
    requestIdHeader: "x-request-id",
    genReqId: () => randomUUID(),
    rewriteUrl: (req) => rewriteUrl(req.url ?? "/"),
    // Request lines are logged by our own hooks (below), inside the request's trace context.
    logController: new LogController({ disableRequestLogging: true }),
    // Receiving a request is bounded (headers, then the whole request); sending a response is not,
    // so long polls and streams are unaffected by these (docs/limits.md).
    requestTimeout: env.REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: Math.min(env.HEADERS_TIMEOUT_MS, env.REQUEST_TIMEOUT_MS),
      // Node checks both timeouts on this interval (30 s by default, which would double a short limit).
      connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(env.HEADERS_TIMEOUT_MS / 4))),
    },
    keepAliveTimeout: env.KEEP_ALIVE_TIMEOUT_MS,
    connectionTimeout: env.CONNECTION_TIMEOUT_MS,
  });
  traceRoutes(app, env.OTEL_POLL_TRACE_RATIO);
  // Per-request lines at debug level only (polls are frequent and cheap), carrying the trace id;
  // without debug logging the hooks are not registered at all (they run on every poll).
  if (deps.logger.isLevelEnabled("debug")) {
    app.addHook("onRequest", (request, _reply, done) => {
      request.log.debug({ req: { method: request.method, url: request.url } }, "incoming request");
      done();
    });
    app.addHook("onResponse", (request, reply, done) => {
      request.log.debug({ res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, "request completed");
      done();
    });
  }
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(jsonSerializerCompiler);

  // Any body is JSON, measured as it arrives and refused before it is parsed if over a limit.
  app.removeAllContentTypeParsers();
  const offLoop = new OffLoopParser(RequestLimits.parse(env));
  app.addHook("onClose", () => offLoop.close());
  app.addContentTypeParser("*", jsonBodyParser({ bytes: bodyLimit, depth: env.MAX_JSON_DEPTH, values: env.MAX_JSON_VALUES, ownerBytes: 2 * bodyLimit }, offLoop));

  app.setErrorHandler((error: FastifyError | ServiceError, request, reply) => {
    // Every error body is JSON, also where a streamed answer had set its own type before its first
    // piece failed (fastify has already copied that type onto the raw response).
    reply.type("application/json; charset=utf-8");
    // Fastify closes the connection after any refused body; one being discarded to its end may keep it.
    if (discardsRest(request.raw)) reply.header("connection", "keep-alive");
    else if (largeUnreadBody(request)) reply.header("connection", "close");
    if (error instanceof BodyTooLarge) return reply.status(413).send({ detail: error.message });
    if ((error as FastifyError).code === "FST_ERR_CTP_BODY_TOO_LARGE") return reply.status(413).send({ detail: bodyTooLarge(bodyLimit).message });
    const serviceError = classifyFastifyError(error);
    const { status, body } = toHttp(serviceError);
    if (serviceError.category === "unknown") request.log.error({ err: error }, "unhandled error");
    // A failure on our side says why in the log too (the client sees only a retryable message).
    else if (status >= 500) request.log.warn({ err: serviceError.cause ?? serviceError, status }, serviceError.message);
    if (serviceError.category === "auth") reply.header("www-authenticate", "Bearer");
    // The spec tells clients to back off on a 429; say for how long (at least a second).
    if (serviceError.category === "rate_limit") reply.header("retry-after", String(Math.max(1, Math.ceil((serviceError.retryAfterMs ?? 1000) / 1000))));
    return reply.status(status).send(body);
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ detail: "Not Found" }));

  const identify = createKeyring(serviceKeys(env));
  const limits = new KeyLimiter(
    { concurrency: env.KEY_CONCURRENCY, ratePerS: env.KEY_RATE_PER_S, burst: env.KEY_RATE_BURST, heavy: env.KEY_HEAVY_CONCURRENCY, streams: env.EVENT_STREAMS_PER_OWNER },
    { shared: sharedLimits(deps.limitsLink ?? deps.link, deps.logger), waitMs: env.KEY_LIMITS_WAIT_MS, logger: deps.logger },
  );
  app.addHook("onClose", (_app, done) => {
    limits.close();
    done();
  });
  app.decorateRequest("principal", null);
  app.decorateRequest("givePlaceBack", null);
  app.decorateRequest("countHeavyRead", async function (this: FastifyRequest, reply: FastifyReply) {
    if (!this.principal || !limits.counts("heavy")) return;
    const admission = await limits.admit(this.principal.owner, "heavy");
    if (admission.refusal) throw admission.refusal;
    holdUntilClosed(reply, admission.release);
  });
  const PUBLIC = env.DOCS_PUBLIC ? [...HEALTH, ...ROOT, ...CONSOLE, ...DOCS] : [...HEALTH, ...ROOT, ...CONSOLE];
  // Callback-style hooks: on the hot poll path an async hook costs a promise per request.
  app.addHook("onRequest", (request, reply, done) => {
    const path = request.url.split("?")[0] ?? "";
    if (PUBLIC.some((pattern) => pattern.test(path))) return done();
    const principal = identify(presentedKey(request));
    if (!principal) return done(new ServiceError("auth", "Missing or invalid API key"));
    request.principal = principal;
    // Configuration changes (every write under /v1/config) need an admin key (docs/security.md).
    if (principal.role !== "admin" && request.method !== "GET" && request.method !== "HEAD" && request.routeOptions.url?.startsWith("/v1/config/")) {
      return done(new ServiceError("forbidden", "This service key may use the API but not change configuration (it is not an admin key)"));
    }
    // Everything but light reads counts against its owner's limits, before its body is read (docs/limits.md).
    const use = keyUse(request.method, request.routeOptions.url);
    if (!use || !limits.counts(use)) return done();
    limits.admit(principal.owner, use).then((admission) => {
      if (admission.refusal) return done(admission.refusal);
      holdUntilClosed(reply, admission.release);
      request.givePlaceBack = admission.release;
      done();
    }, done);
  });
  // An answer sent whole gives its place back before it leaves (waiting a moment for the shared
  // record), so the client's next request, on any gateway, finds it free; a streamed answer keeps
  // its place until the stream ends (holdUntilClosed).
  app.addHook("onSend", (request, reply, payload, done) => {
    const giveBack = request.givePlaceBack;
    if (!giveBack || payload instanceof Readable) return done(null, payload);
    request.givePlaceBack = null;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, PLACE_BACK_WAIT_MS)));
    void Promise.race([giveBack(), waited])
      .then(() => {
        clearTimeout(timer);
        done(null, payload);
      })
      // Out of fastify's own call stack a throw would end the process: this answer alone fails.
      .catch((error: unknown) => {
        request.log.error({ err: error }, "an answer could not be sent");
        reply.raw.destroy();
      });
  });

  // Route templates, never raw URLs, so job ids do not become metric series.
  app.addHook("onResponse", (request, reply, done) => {
    metrics.httpRequests(request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime);
    done();
  });

  await registerOpenApi(app, env);
  await app.register(healthRoutes(deps));
  await app.register(configRoutes(deps), { prefix: "/v1" });
  await app.register(forwardedRoutes(deps));
  await app.register(jobRoutes(deps, offLoop));
  await app.register(consoleRoutes());
  return app;
}

/** Keeps a place until the response was sent or the client went away (already, maybe, while the limits were asked). */
function holdUntilClosed(reply: FastifyReply, release: () => Promise<void>): void {
  if (reply.raw.closed) void release();
  else reply.raw.once("close", () => void release());
}

/** How long an answer waits for its place to be back in the shared limits record (a slow bucket must not slow every answer). */
const PLACE_BACK_WAIT_MS = 100;

/**
 * A refused request whose body is still arriving, and more than this of it: its connection is closed
 * after the answer rather than kept by reading the rest and throwing it away (Node's default, which
 * cost a gateway about 10 ms of CPU per refused 1.2 MB creation: an owner over its limits could keep
 * it busy with uploads it never reads).
 */
const UNREAD_BODY_CLOSE_BYTES = 64 * 1024;

function largeUnreadBody(request: FastifyRequest): boolean {
  if (request.raw.complete) return false;
  const declared = request.headers["content-length"];
  // A chunked body declares no length: it may be as large as the body limit allows.
  return declared === undefined || Number(declared) > UNREAD_BODY_CLOSE_BYTES;
}

/** Fastify's own client errors (size, media type, …) as ServiceErrors; never a 500 for a client mistake. */
function classifyFastifyError(error: FastifyError | ServiceError): ServiceError {
  if (error instanceof ServiceError) return error;
  switch (error.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return jsonInvalid();
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ServiceError("validation", "Request validation failed", {
        issues: [{ type: "missing", loc: ["body"], msg: "Field required" }],
      });
    default:
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return new ServiceError("validation", error.message, { simple: true });
      }
      return ServiceError.from(error);
  }
}
