import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOtlpCollector, OtlpSpanKind, type CollectedSpan, type OtlpCollector } from "../support/otlp-collector";
import { startStack, waitFor, type RunningProcess, type Stack } from "../support/stack";

/**
 * Trace continuity (architecture invariant 9): one client request is one trace, from the gateway's
 * HTTP server span through the NATS producer span to the criteria service's consumer span, and
 * the log lines of both processes carry that trace id. Spans are exported over OTLP/HTTP (JSON)
 * to an in-test collector.
 */

let collector: OtlpCollector;
let stack: Stack;
let gateway: RunningProcess;
let criteria: RunningProcess;

beforeAll(async () => {
  collector = await startOtlpCollector();
  stack = await startStack({ services: { criteria: 1 }, env: { ...collector.env(), LOG_LEVEL: "debug" } });
  gateway = stack.processes.find((p) => p.name === "gateway")!;
  criteria = stack.processes.find((p) => p.name === "criteria")!;
});
afterAll(async () => {
  await stack?.stop();
  await collector?.close();
});

const CONSUMER_NAME = "process litrev.rpc.criteria.analyze-question";

/** Sends one mock analyze-question with a known request id; returns the trace that carried it. */
async function tracedRequest(requestId: string): Promise<{ consumer: CollectedSpan; server: CollectedSpan; trace: CollectedSpan[] }> {
  const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Q?", mock: true }, {
    headers: { "x-request-id": requestId },
  });
  expect(res.status).toBe(200);

  // The trace id is not in the HTTP response: find the gateway's log line for this request id.
  const logged = await waitFor(() => logLines(gateway).find((l) => l.reqId === requestId && typeof l.trace_id === "string"));
  const traceId = logged.trace_id as string;

  return waitFor(
    () => {
      const trace = collector.spans().filter((s) => s.traceId === traceId);
      const server = trace.find((s) => s.service === "litrev-gateway" && s.kind === OtlpSpanKind.SERVER);
      const consumer = trace.find((s) => s.service === "litrev-criteria" && s.name === CONSUMER_NAME);
      return server && consumer ? { server, consumer, trace } : undefined;
    },
    20_000,
    200,
  );
}

function logLines(process: RunningProcess): Record<string, unknown>[] {
  return process
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("distributed tracing across the gateway and the criteria service", () => {
  it("exports spans as OTLP/HTTP JSON from both processes", async () => {
    await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "warm-up", mock: true });
    await waitFor(() => {
      const services = new Set(collector.spans().map((s) => s.service));
      return services.has("litrev-gateway") && services.has("litrev-criteria");
    }, 20_000);
    expect(collector.rejected()).toBe(0);
  });

  it("puts the gateway's server span and the service's consumer span in one trace, parent-linked", async () => {
    const { server, consumer, trace } = await tracedRequest("trace-test-1");
    expect(consumer.kind).toBe(OtlpSpanKind.CONSUMER);
    expect(consumer.attributes["messaging.system"]).toBe("nats");
    expect(server.traceId).toBe(consumer.traceId);
    expect(server.attributes["http.request.method"] ?? server.attributes["http.method"]).toBe("POST");

    // Walk the consumer's parents: through the gateway's NATS producer span up to its HTTP server span.
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const chain: CollectedSpan[] = [];
    for (let span: CollectedSpan | undefined = consumer; span; span = span.parentSpanId ? byId.get(span.parentSpanId) : undefined) {
      chain.push(span);
      if (chain.length > 20) throw new Error("parent cycle");
    }
    expect(chain.map((s) => [s.service, s.kind])).toEqual([
      ["litrev-criteria", OtlpSpanKind.CONSUMER],
      ["litrev-gateway", OtlpSpanKind.PRODUCER],
      ["litrev-gateway", OtlpSpanKind.SERVER],
    ]);
    expect(chain.at(-1)).toBe(server);
    expect(server.parentSpanId).toBeUndefined();
  });

  it("gives each request its own trace", async () => {
    const a = await tracedRequest("trace-test-2");
    const b = await tracedRequest("trace-test-3");
    expect(a.server.traceId).not.toBe(b.server.traceId);
  });

  it("writes the trace id on log lines of both processes", async () => {
    const { server } = await tracedRequest("trace-test-4");
    const gatewayLines = logLines(gateway).filter((l) => l.reqId === "trace-test-4");
    expect(gatewayLines.length).toBeGreaterThan(0);
    for (const line of gatewayLines) expect(line.trace_id).toBe(server.traceId);

    const handled = await waitFor(() =>
      logLines(criteria).find((l) => l.msg === "operation handled" && l.request_id === "trace-test-4"),
    );
    expect(handled.trace_id).toBe(server.traceId);
  });
});
