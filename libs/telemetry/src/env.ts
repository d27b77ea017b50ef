import { z } from "zod";

const positiveInt = z.coerce.number().int().min(1);

/**
 * The variables the telemetry SDK reads itself, before the application parses its own env
 * (register.ts runs first). A bad value stops the process at start-up rather than quietly
 * leaving metrics off.
 */
export const TelemetryEnv = z.object({
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: z.string().min(1).optional(),
  /** `grpc`, `http/json`, anything else `http/protobuf` (the SDK's own reading). */
  OTEL_EXPORTER_OTLP_PROTOCOL: z.string().trim().optional(),
  OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: z.string().trim().optional(),
  /** Set: metric export is left to the SDK's own standard variables. */
  OTEL_METRICS_EXPORTER: z.string().min(1).optional(),
  OTEL_METRIC_EXPORT_INTERVAL: positiveInt.default(60_000),
  OTEL_METRIC_EXPORT_TIMEOUT: positiveInt.default(30_000),
  /** Prometheus scrape endpoint; unset leaves it off so processes on one host never fight over a port. */
  METRICS_PORT: positiveInt.max(65_535).optional(),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
});
export type TelemetryEnv = z.infer<typeof TelemetryEnv>;

/** Thrown for an invalid telemetry variable; the message names each one. */
export class TelemetryConfigError extends Error {}

/** The telemetry settings of `env`; empty values count as unset, as in the services' env parsing. */
export function parseTelemetryEnv(env: NodeJS.ProcessEnv): TelemetryEnv {
  const set = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ""));
  const result = TelemetryEnv.safeParse(set);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
  throw new TelemetryConfigError(`Invalid configuration in the environment:\n${lines.join("\n")}`);
}
