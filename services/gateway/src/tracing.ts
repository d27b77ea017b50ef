import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { skipServerSpan } from "@litrev/telemetry";

const tracer = trace.getTracer("@litrev/gateway");

/**
 * One SERVER span per request, parented on the caller's W3C trace context and active for the
 * whole request (auth, validation, handler, NATS producer spans, logs), renamed to its route
 * template once routed. Done here rather than by the generic http instrumentation, which binds
 * every request's emitters even when it ignores the request (about a sixth of poll throughput);
 * probes get no span and job polls are sampled (`skipServerSpan`). Register before other hooks.
 */
export function traceRoutes(app: FastifyInstance, pollTraceRatio: number): void {
  const spans = new WeakMap<FastifyRequest, Span>();

  app.addHook("onRequest", (request, _reply, done) => {
    if (skipServerSpan(request.method, request.url, pollTraceRatio)) return done();
    const parent = propagation.extract(context.active(), request.headers);
    const span = tracer.startSpan(
      request.method,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": request.method, "url.path": request.url.split("?")[0] ?? "", "request.id": request.id },
      },
      parent,
    );
    spans.set(request, span);
    // Continuing the request inside the span's context makes it active for every later step.
    context.with(trace.setSpan(parent, span), done);
  });

  app.addHook("onError", (request, _reply, error, done) => {
    const span = spans.get(request);
    span?.recordException(error);
    span?.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    done();
  });

  app.addHook("onResponse", (request, reply, done) => {
    const span = spans.get(request);
    if (span) {
      const route = request.routeOptions.url;
      if (route) {
        span.setAttribute("http.route", route);
        span.updateName(`${request.method} ${route}`);
      }
      span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      spans.delete(request);
    }
    done();
  });
}
