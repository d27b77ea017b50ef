import { getNodeAutoInstrumentations } from "@opentelemetry/auto-instrumentations-node";
import { OTLPMetricExporter as GrpcMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { PeriodicExportingMetricReader, type IMetricReader, type PushMetricExporter } from "@opentelemetry/sdk-metrics";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { EXIT_CONFIG } from "./exit-codes";
import { parseTelemetryEnv, TelemetryConfigError, type TelemetryEnv } from "./env";

let sdk: NodeSDK | undefined;

export function startTelemetry(serviceName?: string): void {
  if (sdk) return;
  const env = telemetryEnvOrExit(process.env);
  const exporting = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  // Without an endpoint the SDK would still try localhost:4318; "none" keeps tracing local.
  if (!exporting) process.env.OTEL_TRACES_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  sdk = new NodeSDK({
    serviceName: serviceName ?? env.OTEL_SERVICE_NAME ?? "litrev",
    metricReaders: metricReaders(env, (error, port) => {
      // Not fatal: the process serves without its scrape endpoint, and says why once.
      process.stderr.write(`[telemetry] metrics endpoint could not listen on port ${port}: ${error.message}\n`);
    }),
    instrumentations: [
      getNodeAutoInstrumentations({
        // Noisy or irrelevant here: every file read and DNS lookup would become a span.
        "@opentelemetry/instrumentation-fs": { enabled: false },
        "@opentelemetry/instrumentation-dns": { enabled: false },
        "@opentelemetry/instrumentation-net": { enabled: false },
        // Server spans come from the gateway itself (services/gateway/src/tracing.ts), per route:
        // the generic incoming-request wrapper costs about a sixth of poll throughput even for
        // requests it ignores. Outgoing calls (the provider) keep their client spans.
        "@opentelemetry/instrumentation-http": { disableIncomingRequestInstrumentation: true },
      }),
    ],
  });
  sdk.start();
}

/** A bad telemetry variable is a configuration error like any other: say which, exit 78. */
function telemetryEnvOrExit(source: NodeJS.ProcessEnv): TelemetryEnv {
  try {
    return parseTelemetryEnv(source);
  } catch (error) {
    if (!(error instanceof TelemetryConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(EXIT_CONFIG);
  }
}

/**
 * Where metrics go, from the environment:
 * - OTLP, next to the traces, whenever an OTLP endpoint is set (protocol from OTEL_EXPORTER_OTLP_PROTOCOL,
 *   interval from OTEL_METRIC_EXPORT_INTERVAL);
 * - a Prometheus scrape endpoint at `http://METRICS_HOST:METRICS_PORT/metrics` when METRICS_PORT is set
 *   (its own listener, apart from any API port; METRICS_HOST defaults to 127.0.0.1).
 *   Off by default so that several processes on one host never fight over a port.
 * An explicit OTEL_METRICS_EXPORTER hands the choice back to the SDK's standard variables (`undefined`).
 * No reader at all means no meter provider: every metric call stays a no-op.
 * An invalid variable throws TelemetryConfigError.
 */
export function metricReadersFromEnv(
  source: NodeJS.ProcessEnv,
  onListenError: (error: Error, port: number) => void = () => undefined,
): IMetricReader[] | undefined {
  return metricReaders(parseTelemetryEnv(source), onListenError);
}

function metricReaders(env: TelemetryEnv, onListenError: (error: Error, port: number) => void): IMetricReader[] | undefined {
  if (env.OTEL_METRICS_EXPORTER) return undefined;
  const readers: IMetricReader[] = [];
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) {
    const interval = env.OTEL_METRIC_EXPORT_INTERVAL;
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: otlpMetricExporter(env),
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(env.OTEL_METRIC_EXPORT_TIMEOUT, interval),
      }),
    );
  }
  const port = env.METRICS_PORT;
  if (port !== undefined) {
    // Loopback unless METRICS_HOST says otherwise: metrics are not for everyone on the network
    // (Kubernetes, where Prometheus scrapes pod IPs, sets 0.0.0.0).
    readers.push(new PrometheusExporter({ host: env.METRICS_HOST, port }, (error) => error && onListenError(error, port)));
  }
  return readers;
}

function otlpMetricExporter(env: TelemetryEnv): PushMetricExporter {
  const protocol = env.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf";
  if (protocol === "grpc") return new GrpcMetricExporter();
  if (protocol === "http/json") return new JsonMetricExporter();
  return new ProtoMetricExporter();
}

/** Flushes and stops the SDK; part of every process's graceful shutdown. */
export async function stopTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
}
