import { context, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span } from "@opentelemetry/api";
import type { MsgHdrs } from "@nats-io/transport-node";

/** NATS has no OpenTelemetry instrumentation: W3C trace context rides in message headers. */
const setter = { set: (carrier: MsgHdrs, key: string, value: string) => carrier.set(key, value) };
const getter = {
  get: (carrier: MsgHdrs, key: string) => carrier.get(key) || undefined,
  keys: (carrier: MsgHdrs) => carrier.keys(),
};

export const tracer = trace.getTracer("@litrev/messaging");

export function injectTraceContext(headers: MsgHdrs, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, setter);
}

export function extractTraceContext(headers: MsgHdrs | undefined): Context {
  return headers ? propagation.extract(context.active(), headers, getter) : context.active();
}

/** Runs `fn` inside a messaging span (`messaging.system = nats`), recording failures. */
export async function withMessagingSpan<T>(
  name: string,
  kind: SpanKind,
  subject: string,
  parent: Context,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(
    name,
    { kind, attributes: { "messaging.system": "nats", "messaging.destination.name": subject } },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export { SpanKind };
