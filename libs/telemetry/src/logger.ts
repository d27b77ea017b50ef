import { trace } from "@opentelemetry/api";
import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

/**
 * Paths whose values never reach a log line: service keys, provider keys, auth headers.
 * Provider keys also travel in NATS headers, so any header bag is covered.
 */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  "req.headers[\"x-api-key\"]",
  "req.headers[\"x-llm-api-key\"]",
  "req.headers[\"x-openai-api-key\"]",
  "headers.authorization",
  "headers[\"x-api-key\"]",
  "headers[\"x-llm-api-key\"]",
  "headers[\"x-openai-api-key\"]",
  "providerKey",
  "apiKey",
  "*.providerKey",
  "*.apiKey",
  "*.api_key",
  // NATS credentials (connection options, env objects), should one ever be logged by mistake.
  "pass",
  "password",
  "*.pass",
  "*.password",
  "NATS_PASSWORD",
  "*.NATS_PASSWORD",
];

/** JSON logs with the active trace and span ids on every line, and secrets redacted. */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info", destination?: pino.DestinationStream): Logger {
  const options: LoggerOptions = {
    name,
    level,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
