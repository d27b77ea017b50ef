import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/**
 * A tiny OTLP/HTTP trace receiver for end-to-end suites: accepts `POST /v1/traces` with the JSON
 * encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and keeps every span with its service name.
 */

/** OTLP span kinds as numbers (the JSON encoding uses the protobuf enum values). */
export const OtlpSpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

export interface OtlpCollector {
  /** Value for OTEL_EXPORTER_OTLP_ENDPOINT, e.g. http://127.0.0.1:4318 */
  endpoint: string;
  spans(): CollectedSpan[];
  /** Environment that makes a process export here quickly, as JSON. */
  env(): NodeJS.ProcessEnv;
  /** Requests that could not be parsed (a wrong protocol shows up here rather than as silence). */
  rejected(): number;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}
interface OtlpTraceRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: OtlpKeyValue[];
      }[];
    }[];
  }[];
}

function plain(value: OtlpAnyValue | undefined): unknown {
  if (!value) return undefined;
  return value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const collected: CollectedSpan[] = [];
  let rejected = 0;

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== "POST" || !req.url?.startsWith("/v1/traces")) {
        // Metrics and logs are switched off in the processes; anything else is simply accepted.
        await readBody(req).catch(() => undefined);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        return;
      }
      try {
        const body = JSON.parse((await readBody(req)).toString("utf8")) as OtlpTraceRequest;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              collected.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind ?? 0,
                attributes: attributesOf(span.attributes),
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch {
        rejected++;
        res.writeHead(400).end();
      }
    })();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;

  return {
    endpoint,
    spans: () => [...collected],
    rejected: () => rejected,
    env: () => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "200",
    }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
