import {
  metrics as otelMetrics,
  ValueType,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type ObservableResult,
  type UpDownCounter,
} from "@opentelemetry/api";

/**
 * The service's own metrics, as a small typed API over `@opentelemetry/api` meters.
 *
 * Without the SDK (unit tests, tools) every call is a no-op. With it (`register.ts`), the values
 * go to every configured reader: OTLP next to the traces and/or the per-process Prometheus
 * endpoint on METRICS_PORT (see sdk.ts). Attribute values must come from small, fixed sets —
 * route templates, model names, categories — never ids or raw URLs, or the series count explodes.
 */

/** Instrument names. Prometheus shows them with `.` → `_` and `_total` on counters. */
export const METRIC_NAMES = {
  httpRequests: "litrev.http.requests",
  httpDuration: "litrev.http.request.duration_ms",
  providerCalls: "litrev.provider.calls",
  tokens: "litrev.provider.tokens",
  costUsd: "litrev.provider.cost_usd",
  retries: "litrev.provider.retries",
  jobs: "litrev.jobs",
  queueDepth: "litrev.queue.depth",
  jobDuration: "litrev.job.duration_ms",
} as const;

export type TokenKind = "input" | "cached_input" | "output";

/** A queue-depth reading; `undefined` means "unknown right now" and records nothing. */
export type QueueDepthReader = () => number | undefined | Promise<number | undefined>;

export interface Metrics {
  /** One HTTP request answered: `route` is the route template (`/v1/screening/jobs/:job_id`), never the raw URL. */
  httpRequests(route: string, status: number, durationMs?: number): void;
  /** One provider call finished: `outcome` is `ok` or the error category (`rate_limit`, `quota`, `timeout`, …). */
  providerCall(model: string, outcome: string): void;
  tokens(model: string, kind: TokenKind, n: number): void;
  costUsd(model: string, usd: number): void;
  /** One retry about to happen; `reason` is the category that caused it (`rate_limit` counts the 429s). */
  retries(reason: string): void;
  /**
   * Jobs entering (+1) or leaving (-1) a status in this process. Summed over all processes the
   * value is the number of jobs per status, even when a job starts on one replica and ends on another.
   */
  jobsByStatus(service: string, status: string, delta: number): void;
  /**
   * Registers a reader called at each collection (scrape or export) for the pending work of
   * `service`, e.g. a JetStream consumer's `num_pending`. Returns the function that unregisters it.
   */
  queueDepth(service: string, read: QueueDepthReader): () => void;
  /** Wall time of one job run, recorded when it reaches a terminal status. */
  jobDuration(service: string, ms: number, status?: string): void;
}

/** A slow reader (NATS down) must not stall a scrape, or a liveness probe on /metrics. */
export const QUEUE_DEPTH_READ_TIMEOUT_MS = 1_000;

/** Job-sized buckets (100 ms … 2 h); the SDK's defaults stop at 10 s. */
const JOB_DURATION_BUCKETS_MS = [100, 500, 1_000, 5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 7_200_000];

export function createMetrics(meter: Meter): Metrics {
  const requests: Counter = meter.createCounter(METRIC_NAMES.httpRequests, { description: "HTTP requests answered, by route template and status", unit: "{request}" });
  const requestDuration: Histogram = meter.createHistogram(METRIC_NAMES.httpDuration, { description: "HTTP request duration", unit: "ms" });
  const providerCalls: Counter = meter.createCounter(METRIC_NAMES.providerCalls, { description: "Language-model provider calls, by model and outcome", unit: "{call}" });
  const tokens: Counter = meter.createCounter(METRIC_NAMES.tokens, { description: "Provider tokens, by model and kind", unit: "{token}", valueType: ValueType.INT });
  const cost: Counter = meter.createCounter(METRIC_NAMES.costUsd, { description: "Provider cost in US dollars (per-model price table, approximate)", valueType: ValueType.DOUBLE });
  const retries: Counter = meter.createCounter(METRIC_NAMES.retries, { description: "Provider call retries, by reason", unit: "{retry}" });
  const jobs: UpDownCounter = meter.createUpDownCounter(METRIC_NAMES.jobs, { description: "Jobs per status (sum over processes)", unit: "{job}" });
  const jobDuration: Histogram = meter.createHistogram(METRIC_NAMES.jobDuration, {
    description: "Job wall time from first run to terminal status",
    unit: "ms",
    advice: { explicitBucketBoundaries: JOB_DURATION_BUCKETS_MS },
  });

  const depthReaders = new Set<{ service: string; read: QueueDepthReader }>();
  const depth = meter.createObservableGauge(METRIC_NAMES.queueDepth, { description: "Job commands waiting for a worker", unit: "{job}" });
  depth.addCallback(async (result: ObservableResult) => {
    await Promise.all(
      [...depthReaders].map(async ({ service, read }) => {
        const value = await withTimeout(read, QUEUE_DEPTH_READ_TIMEOUT_MS);
        if (value !== undefined && Number.isFinite(value)) result.observe(value, { service });
      }),
    );
  });

  return {
    httpRequests(route, status, durationMs) {
      const attributes = { "http.route": route, "http.response.status_code": status };
      requests.add(1, attributes);
      if (durationMs !== undefined && Number.isFinite(durationMs) && durationMs >= 0) requestDuration.record(durationMs, attributes);
    },
    providerCall(model, outcome) {
      providerCalls.add(1, { model, outcome });
    },
    tokens(model, kind, n) {
      if (Number.isFinite(n) && n > 0) tokens.add(Math.round(n), { model, kind });
    },
    costUsd(model, usd) {
      if (Number.isFinite(usd) && usd > 0) cost.add(usd, { model });
    },
    retries(reason) {
      retries.add(1, { reason });
    },
    jobsByStatus(service, status, delta) {
      if (Number.isFinite(delta) && delta !== 0) jobs.add(delta, { service, status });
    },
    queueDepth(service, read) {
      const entry = { service, read };
      depthReaders.add(entry);
      return () => void depthReaders.delete(entry);
    },
    jobDuration(service, ms, status) {
      if (Number.isFinite(ms) && ms >= 0) jobDuration.record(ms, status ? { service, status } : { service });
    },
  };
}

/** A failing or late reading is skipped, never thrown into the collection. */
async function withTimeout(read: QueueDepthReader, ms: number): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  try {
    return await Promise.race([Promise.resolve().then(read), late]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

let bound: { provider: MeterProvider; metrics: Metrics } | undefined;

/**
 * Follows the global meter provider: the API has no proxy for meters, so instruments made before
 * the SDK started would stay no-ops forever. Re-binding on a provider change keeps early imports safe.
 */
function current(): Metrics {
  const provider = otelMetrics.getMeterProvider();
  if (bound?.provider !== provider) bound = { provider, metrics: createMetrics(provider.getMeter("litrev")) };
  return bound.metrics;
}

/** The process-wide metrics; import and call from anywhere. */
export const metrics: Metrics = {
  httpRequests: (route, status, durationMs) => current().httpRequests(route, status, durationMs),
  providerCall: (model, outcome) => current().providerCall(model, outcome),
  tokens: (model, kind, n) => current().tokens(model, kind, n),
  costUsd: (model, usd) => current().costUsd(model, usd),
  retries: (reason) => current().retries(reason),
  jobsByStatus: (service, status, delta) => current().jobsByStatus(service, status, delta),
  queueDepth: (service, read) => current().queueDepth(service, read),
  jobDuration: (service, ms, status) => current().jobDuration(service, ms, status),
};
