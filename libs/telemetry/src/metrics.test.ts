import { metrics as otelMetrics } from "@opentelemetry/api";
import { DataPointType, MeterProvider, MetricReader, type MetricData } from "@opentelemetry/sdk-metrics";
import { afterEach, describe, expect, it } from "vitest";
import { METRIC_NAMES, QUEUE_DEPTH_READ_TIMEOUT_MS, createMetrics, metrics } from "./metrics";

/** Collects on demand, like a Prometheus scrape. */
class InMemoryReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}

  async read(): Promise<MetricData[]> {
    const { resourceMetrics } = await this.collect();
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  }
}

function setup() {
  const reader = new InMemoryReader();
  const provider = new MeterProvider({ readers: [reader] });
  return { reader, provider, m: createMetrics(provider.getMeter("test")) };
}

/** Data points of one instrument as [attributes, value] pairs; histograms give [attributes, {count, sum}]. */
function points(all: MetricData[], name: string): Array<[Record<string, unknown>, unknown]> {
  const metric = all.find((m) => m.descriptor.name === name);
  if (!metric) return [];
  return metric.dataPoints.map((p) => {
    if (metric.dataPointType === DataPointType.HISTOGRAM) {
      const h = p.value as { count: number; sum?: number };
      return [p.attributes, { count: h.count, sum: h.sum }];
    }
    return [p.attributes, p.value];
  });
}

describe("metrics", () => {
  afterEach(() => otelMetrics.disable());

  it("counts requests by route template and status, with durations", async () => {
    const { reader, m } = setup();
    m.httpRequests("/v1/screening/jobs/:job_id", 200, 1.5);
    m.httpRequests("/v1/screening/jobs/:job_id", 200, 2.5);
    m.httpRequests("/v1/screening/jobs", 409);
    const all = await reader.read();
    expect(points(all, METRIC_NAMES.httpRequests)).toEqual(
      expect.arrayContaining([
        [{ "http.route": "/v1/screening/jobs/:job_id", "http.response.status_code": 200 }, 2],
        [{ "http.route": "/v1/screening/jobs", "http.response.status_code": 409 }, 1],
      ]),
    );
    expect(points(all, METRIC_NAMES.httpDuration)).toEqual([
      [{ "http.route": "/v1/screening/jobs/:job_id", "http.response.status_code": 200 }, { count: 2, sum: 4 }],
    ]);
  });

  it("records provider calls, tokens, cost and retries; ignores nonsense amounts", async () => {
    const { reader, m } = setup();
    m.providerCall("gpt-5-nano", "ok");
    m.providerCall("gpt-5-nano", "rate_limit");
    m.tokens("gpt-5-nano", "input", 1200);
    m.tokens("gpt-5-nano", "cached_input", 1024);
    m.tokens("gpt-5-nano", "output", 40);
    m.tokens("gpt-5-nano", "output", 0);
    m.tokens("gpt-5-nano", "output", Number.NaN);
    m.costUsd("gpt-5-nano", 0.000123);
    m.costUsd("gpt-5-nano", -1);
    m.retries("rate_limit");
    m.retries("rate_limit");
    m.retries("timeout");
    const all = await reader.read();
    expect(points(all, METRIC_NAMES.providerCalls)).toEqual(
      expect.arrayContaining([
        [{ model: "gpt-5-nano", outcome: "ok" }, 1],
        [{ model: "gpt-5-nano", outcome: "rate_limit" }, 1],
      ]),
    );
    expect(points(all, METRIC_NAMES.tokens)).toEqual(
      expect.arrayContaining([
        [{ model: "gpt-5-nano", kind: "input" }, 1200],
        [{ model: "gpt-5-nano", kind: "cached_input" }, 1024],
        [{ model: "gpt-5-nano", kind: "output" }, 40],
      ]),
    );
    const [[, usd]] = points(all, METRIC_NAMES.costUsd) as [[unknown, number]];
    expect(usd).toBeCloseTo(0.000123, 9);
    expect(points(all, METRIC_NAMES.retries)).toEqual(
      expect.arrayContaining([
        [{ reason: "rate_limit" }, 2],
        [{ reason: "timeout" }, 1],
      ]),
    );
  });

  it("tracks jobs per status as +1/-1 transitions and job durations", async () => {
    const { reader, m } = setup();
    m.jobsByStatus("screening", "pending", 1);
    m.jobsByStatus("screening", "pending", 1);
    m.jobsByStatus("screening", "pending", -1);
    m.jobsByStatus("screening", "running", 1);
    m.jobDuration("screening", 12_000, "completed");
    m.jobDuration("indexer", 500);
    const all = await reader.read();
    expect(points(all, METRIC_NAMES.jobs)).toEqual(
      expect.arrayContaining([
        [{ service: "screening", status: "pending" }, 1],
        [{ service: "screening", status: "running" }, 1],
      ]),
    );
    expect(points(all, METRIC_NAMES.jobDuration)).toEqual(
      expect.arrayContaining([
        [{ service: "screening", status: "completed" }, { count: 1, sum: 12_000 }],
        [{ service: "indexer" }, { count: 1, sum: 500 }],
      ]),
    );
  });

  it("reads queue depth at collection time, skips failing or slow readers, and unregisters", async () => {
    const { reader, m } = setup();
    let pending = 7;
    let reads = 0;
    const stop = m.queueDepth("screening", async () => (reads++, pending));
    m.queueDepth("indexer", () => {
      throw new Error("nats down");
    });
    m.queueDepth("criteria", () => new Promise<number>(() => undefined)); // never answers
    const started = Date.now();
    let all = await reader.read();
    expect(Date.now() - started).toBeLessThan(QUEUE_DEPTH_READ_TIMEOUT_MS + 2_000);
    expect(points(all, METRIC_NAMES.queueDepth)).toEqual([[{ service: "screening" }, 7]]);

    pending = 3;
    all = await reader.read();
    expect(points(all, METRIC_NAMES.queueDepth)).toEqual([[{ service: "screening" }, 3]]);

    stop();
    await reader.read();
    expect(reads).toBe(2);
  });

  it("the shared `metrics` follows the global meter provider and is a no-op without one", async () => {
    metrics.httpRequests("/health", 200); // no SDK yet: nothing to record into, and no error
    const { reader, provider } = setup();
    otelMetrics.setGlobalMeterProvider(provider);
    metrics.httpRequests("/health", 200);
    metrics.providerCall("gpt-4.1", "ok");
    const all = await reader.read();
    expect(points(all, METRIC_NAMES.httpRequests)).toEqual([[{ "http.route": "/health", "http.response.status_code": 200 }, 1]]);
    expect(points(all, METRIC_NAMES.providerCalls)).toEqual([[{ model: "gpt-4.1", outcome: "ok" }, 1]]);
  });
});
