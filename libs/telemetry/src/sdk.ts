import { getNodeAutoInstrumentations } from "@opentelemetry/auto-instrumentations-node";
import { NodeSDK } from "@opentelemetry/sdk-node";

let sdk: NodeSDK | undefined;

export function startTelemetry(serviceName = process.env.OTEL_SERVICE_NAME ?? "litrev"): void {
  if (sdk) return;
  const exporting = Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  // Without an endpoint the SDK would still try localhost:4318; "none" keeps tracing local.
  if (!exporting) process.env.OTEL_TRACES_EXPORTER ??= "none";
  process.env.OTEL_METRICS_EXPORTER ??= "none";
  process.env.OTEL_LOGS_EXPORTER ??= "none";
  sdk = new NodeSDK({
    serviceName,
    instrumentations: [
      getNodeAutoInstrumentations({
        // Noisy or irrelevant here: every file read and DNS lookup would become a span.
        "@opentelemetry/instrumentation-fs": { enabled: false },
        "@opentelemetry/instrumentation-dns": { enabled: false },
        "@opentelemetry/instrumentation-net": { enabled: false },
      }),
    ],
  });
  sdk.start();
}

/** Flushes and stops the SDK; part of every process's graceful shutdown. */
export async function stopTelemetry(): Promise<void> {
  await sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
}
