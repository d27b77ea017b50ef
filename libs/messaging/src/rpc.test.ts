import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { operations, ServiceError, type AnalyzeQuestionResponse } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { NatsLink } from "./connection";
import { callOperation, callOperationStreamed, handler, serveOperations, StreamedBody, type HandlerContext, type HandlerEntry, type ServedOperations } from "./rpc";
import { failure } from "../../../test/support/errors";

/** Request-reply over a real nats-server: what the gateway sees for each way a call can end. */

let nats: NatsServerHandle;
let storeDir: string;
let client: NatsLink;
let server: NatsLink;
const subscriptions: ServedOperations[] = [];

beforeAll(async () => {
  storeDir = mkdtempSync(join(tmpdir(), "litrev-rpc-test-"));
  nats = await startNatsServer({ storeDir });
  client = new NatsLink({ servers: nats.url, name: "rpc-test-client" });
  server = new NatsLink({ servers: nats.url, name: "rpc-test-server" });
  await Promise.all([client.ready(), server.ready()]);
}, 30_000);

afterEach(async () => {
  await Promise.all(subscriptions.splice(0).map((sub) => sub.drain()));
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await nats?.stop();
  rmSync(storeDir, { recursive: true, force: true });
}, 30_000);

const analysis: AnalyzeQuestionResponse = { status: "ready", missing_elements: [], suggestion: "fine" };

async function serve(entries: HandlerEntry[], onError?: (error: unknown) => void): Promise<ServedOperations> {
  const nc = await server.ready();
  const served = serveOperations(nc, "criteria", entries, onError ? { onError } : {});
  subscriptions.push(served);
  await nc.flush(); // the subscription is known to the server before the first request
  return served;
}

describe("callOperation / serveOperations", () => {
  it("round-trips a request with defaults applied at the service edge, and the call context", async () => {
    const seen: { input: unknown; ctx: HandlerContext }[] = [];
    await serve([
      handler(operations.analyzeQuestion, async (input, ctx) => {
        seen.push({ input, ctx });
        return analysis;
      }),
    ]);
    const reply = await callOperation(client, operations.analyzeQuestion, { research_question: "q" }, {
      requestId: "req-42",
      providerKey: "sk-secret",
    });
    expect(reply).toEqual(analysis);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.input).toEqual({ research_question: "q", model: "llm-5-mini", mock: false });
    expect(seen[0]!.ctx).toMatchObject({ subject: "litrev.rpc.criteria.analyze-question", requestId: "req-42", providerKey: "sk-secret" });
  });

  it("passes a streamed reply on in parts, byte for byte, parking it once for concurrent requests", async () => {
    // A reply of several 1 MB parts, produced piece by piece like a finished job's poll body.
    const missing = Array.from({ length: 9_000 }, (_, i) => `element ${i} ${"é".repeat(200)}`);
    const whole = JSON.stringify({ status: "ready", missing_elements: missing, suggestion: "fine" });
    const body = new StreamedBody(async function* () {
      yield `{"status":"ready","missing_elements":[`;
      for (let i = 0; i < missing.length; i += 1_000) yield (i ? "," : "") + missing.slice(i, i + 1_000).map((m) => JSON.stringify(m)).join(",");
      yield `],"suggestion":"fine"}`;
    });
    expect(await body.text()).toBe(whole);
    let produced = 0;
    const shared = new StreamedBody(async function* () {
      produced++;
      yield whole;
    });
    await serve([handler(operations.analyzeQuestion, async (input) => (input.research_question === "shared" ? shared : body) as unknown as AnalyzeQuestionResponse)]);

    const streamed = await callOperationStreamed(client, operations.analyzeQuestion, { research_question: "q" });
    if (!("parts" in streamed)) throw new Error("expected a streamed reply");
    expect(streamed.parts.parts).toBeGreaterThan(1);
    const parts: Buffer[] = [];
    for await (const part of streamed.read()) parts.push(Buffer.from(part));
    expect(Math.max(...parts.map((p) => p.length))).toBeLessThan(Buffer.byteLength(whole));
    expect(Buffer.concat(parts).toString("utf8")).toBe(whole);

    // A caller that wants a value gets it parsed and checked as usual.
    const replies = await Promise.all(Array.from({ length: 3 }, () => callOperation(client, operations.analyzeQuestion, { research_question: "shared" })));
    for (const reply of replies) expect(reply.missing_elements).toEqual(missing);
    expect(produced).toBe(1);
  });

  it("fails fast with service_unavailable when no instance serves the operation", async () => {
    const started = performance.now();
    const error = await failure(callOperation(client, operations.picos, { project_description: "p" }, { timeoutMs: 10_000 }));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(error.category).toBe("service_unavailable");
    expect(error.retryable).toBe(true);
    expect(error.message).toContain("criteria");
  });

  it("gives up with a retryable timeout when the service does not answer in time", async () => {
    await serve([
      handler(operations.analyzeQuestion, async () => {
        await new Promise((r) => setTimeout(r, 1_500));
        return analysis;
      }),
    ]);
    const started = performance.now();
    const error = await failure(callOperation(client, operations.analyzeQuestion, { research_question: "q" }, { timeoutMs: 300 }));
    expect(performance.now() - started).toBeLessThan(1_400);
    expect(error.category).toBe("timeout");
    expect(error.retryable).toBe(true);
  });

  it("carries a handler's ServiceError across intact", async () => {
    await serve([
      handler(operations.picos, async () => {
        throw new ServiceError("not_found", "Project not found", { simple: true });
      }),
      handler(operations.analyzeQuestion, async () => {
        throw new ServiceError("rate_limit", "Provider rate limit reached");
      }),
    ]);
    const notFound = await failure(callOperation(client, operations.picos, { project_description: "p" }));
    expect(notFound).toMatchObject({ category: "not_found", message: "Project not found", simple: true, retryable: false });
    const limited = await failure(callOperation(client, operations.analyzeQuestion, { research_question: "q" }));
    expect(limited).toMatchObject({ category: "rate_limit", message: "Provider rate limit reached", retryable: true, simple: false });
  });

  it("hides an unexpected handler error behind `unknown` and reports it to onError", async () => {
    const reported: unknown[] = [];
    await serve(
      [
        handler(operations.analyzeQuestion, async () => {
          throw new Error("database password is hunter2");
        }),
      ],
      (error) => reported.push(error),
    );
    const error = await failure(callOperation(client, operations.analyzeQuestion, { research_question: "q" }));
    expect(error.category).toBe("unknown");
    expect(error.message).not.toContain("hunter2");
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toContain("hunter2");
  });

  it("validates the request again at the service edge and returns field-level issues", async () => {
    let called = false;
    await serve([
      handler(operations.analyzeQuestion, async () => {
        called = true;
        return analysis;
      }),
    ]);
    const bad = { research_question: 7 } as unknown as { research_question: string };
    const error = await failure(callOperation(client, operations.analyzeQuestion, bad));
    expect(called).toBe(false);
    expect(error.category).toBe("validation");
    expect(error.issues).toEqual([{ type: "string_type", loc: ["body", "research_question"], msg: "Input should be a valid string" }]);
  });

  it("rejects a reply that breaks the operation's response contract", async () => {
    await serve([
      handler(operations.analyzeQuestion, async () => ({ status: "maybe" }) as unknown as AnalyzeQuestionResponse),
    ]);
    const error = await failure(callOperation(client, operations.analyzeQuestion, { research_question: "q" }));
    expect(error.category).toBe("unknown");
    expect(error.message).toMatch(/contract/);
  });

  it("drains gracefully: answers the requests already taken, then takes no more", async () => {
    // Its own server connection, closed right after the drain as a service's shutdown does.
    const leaving = new NatsLink({ servers: nats.url, name: "rpc-test-leaving" });
    try {
      const nc = await leaving.ready();
      const served = serveOperations(nc, "criteria", [
        handler(operations.analyzeQuestion, async () => {
          await new Promise((r) => setTimeout(r, 600));
          return analysis;
        }),
      ]);
      await nc.flush();
      const inFlight = callOperation(client, operations.analyzeQuestion, { research_question: "q" }, { timeoutMs: 5_000 });
      await new Promise((r) => setTimeout(r, 150));
      expect(served.inFlight).toBe(1);

      await served.drain();
      expect(served.inFlight).toBe(0);
      await leaving.close();
      await expect(inFlight).resolves.toEqual(analysis);
      const after = await failure(callOperation(client, operations.analyzeQuestion, { research_question: "q" }));
      expect(after.category).toBe("service_unavailable");
    } finally {
      await leaving.close();
    }
  });

  it("shares requests between replicas in the queue group", async () => {
    const served = { a: 0, b: 0 };
    const replicaB = new NatsLink({ servers: nats.url, name: "rpc-test-replica-b" });
    try {
      const ncB = await replicaB.ready();
      await serve([handler(operations.analyzeQuestion, async () => (served.a++, analysis))]);
      const subB = serveOperations(ncB, "criteria", [handler(operations.analyzeQuestion, async () => (served.b++, analysis))]);
      await ncB.flush();
      await Promise.all(
        Array.from({ length: 60 }, () => callOperation(client, operations.analyzeQuestion, { research_question: "q" })),
      );
      await subB.drain();
      expect(served.a + served.b).toBe(60);
      expect(served.a).toBeGreaterThan(0);
      expect(served.b).toBeGreaterThan(0);
    } finally {
      await replicaB.close();
    }
  });
});

describe("NatsLink", () => {
  it("reports itself connected and hands out the connection", async () => {
    expect(client.connected).toBe(true);
    expect(client.connection()).toBe(await client.ready());
  });

  it("answers a retryable service_unavailable while no server is reachable", async () => {
    // A port nothing listens on: the link keeps trying in the background and never connects.
    const offline = new NatsLink({ servers: "nats://127.0.0.1:1", name: "rpc-test-offline" });
    try {
      expect(offline.connected).toBe(false);
      const error = await failure(callOperation(offline, operations.analyzeQuestion, { research_question: "q" }));
      expect(error).toMatchObject({ category: "service_unavailable", retryable: true });
    } finally {
      await offline.close();
    }
  });
});
