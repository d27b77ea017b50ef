import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { z } from "zod";
import { operations, payloadBucket, ServiceError, type AnalyzeQuestionResponse, type Operation } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { NatsLink } from "./connection";
import { keyBindings, KeySealer } from "./key-sealer";
import { callOperation, handler, serveOperations, type HandlerContext, type HandlerEntry, type ServedOperations } from "./rpc";
import { failure } from "../../../test/support/errors";
import { PayloadStore, SPILL_THRESHOLD_BYTES } from "./payload-store";

/** Request-reply over a real nats-server: what the gateway sees for each way a call can end. */

let nats: NatsServerHandle;
let storeDir: string;
let client: NatsLink;
let server: NatsLink;
const subscriptions: ServedOperations[] = [];
const sealer = KeySealer.fromSecret("rpc-test-secret-0123456789");

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

async function serve(entries: HandlerEntry[], onError?: (error: unknown) => void, service: "criteria" | "indexer" = "criteria"): Promise<ServedOperations> {
  const nc = await server.ready();
  const served = serveOperations(nc, service, entries, { sealer, ...(onError ? { onError } : {}) });
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
      sealer,
    });
    expect(reply).toEqual(analysis);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.input).toEqual({ research_question: "q", model: "llm-5-mini", mock: false });
    expect(seen[0]!.ctx).toMatchObject({ subject: "litrev.rpc.criteria.analyze-question", requestId: "req-42", providerKey: "sk-secret" });
  });

  it("sends a provider key only sealed for its request: a token replayed under another request id, or a key in clear, is refused", async () => {
    const seen: (string | undefined)[] = [];
    await serve([
      handler(operations.analyzeQuestion, async (_input, ctx) => {
        seen.push(ctx.providerKey);
        return analysis;
      }),
    ]);
    const nc = client.connection();
    const wire: string[] = [];
    const tap = nc.subscribe("litrev.rpc.>", {
      callback: (_e, m) => {
        wire.push(JSON.stringify(m.headers ? [...m.headers.keys()].map((k) => m.headers!.get(k)) : []) + new TextDecoder().decode(m.data));
      },
    });
    await nc.flush();
    await callOperation(client, operations.analyzeQuestion, { research_question: "q" }, { requestId: "req-a", providerKey: "sk-wire-secret", sealer });
    expect(seen).toEqual(["sk-wire-secret"]);
    expect(wire.join("\n")).not.toContain("sk-wire-secret");

    const subject = "litrev.rpc.criteria.analyze-question";
    const body = JSON.stringify({ research_question: "q" });
    const token = sealer.seal("sk-wire-secret", keyBindings.request(subject, "req-a", body), Date.now() + 60_000);
    const send = async (set: Record<string, string>, payload = body) => {
      const hdrs = natsHeaders();
      for (const [k, v] of Object.entries(set)) hdrs.set(k, v);
      const reply = await nc.request(subject, payload, { headers: hdrs, timeout: 5_000 });
      return JSON.parse(new TextDecoder().decode(reply.data)) as { ok: boolean; error?: { category: string; message: string } };
    };
    // The same token under its own request id opens; under another it does not.
    expect((await send({ "x-request-id": "req-a", "x-llm-api-key-sealed": token })).ok).toBe(true);
    const replayed = await send({ "x-request-id": "req-b", "x-llm-api-key-sealed": token });
    expect(replayed).toMatchObject({ ok: false, error: { category: "auth" } });
    expect(replayed.error!.message).not.toContain(token);
    // Same subject and request id, another body: refused too.
    expect(await send({ "x-request-id": "req-a", "x-llm-api-key-sealed": token }, JSON.stringify({ research_question: "other" }))).toMatchObject({ ok: false, error: { category: "auth" } });
    const expired = sealer.seal("sk-wire-secret", keyBindings.request(subject, "req-c", body), Date.now() - 1);
    expect(await send({ "x-request-id": "req-c", "x-llm-api-key-sealed": expired })).toMatchObject({ ok: false, error: { category: "auth" } });
    expect(await send({ "x-request-id": "req-d", "x-llm-api-key": "sk-in-clear" })).toMatchObject({ ok: false, error: { category: "auth" } });
    expect(seen).toEqual(["sk-wire-secret", "sk-wire-secret"]);
    tap.unsubscribe();
    await expect(callOperation(client, operations.analyzeQuestion, { research_question: "q" }, { providerKey: "sk-x" })).rejects.toThrow(/only sealed/);
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

describe("cancellation", () => {
  it("aborts the handler's signal when the caller's signal fires, and only that request's", async () => {
    const signals = new Map<string, AbortSignal>();
    let errors = 0;
    await serve(
      [
        handler(operations.analyzeQuestion, async (input, ctx) => {
          signals.set(input.research_question, ctx.signal);
          // A provider call that only ends when cancelled (or after 1.5 s).
          await new Promise<void>((resolve) => {
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
            setTimeout(resolve, 1_500).unref();
          });
          return analysis;
        }),
      ],
      () => errors++,
    );
    const controller = new AbortController();
    const cancelled = callOperation(client, operations.analyzeQuestion, { research_question: "cancel me" }, { signal: controller.signal });
    const kept = callOperation(client, operations.analyzeQuestion, { research_question: "keep me" }, { signal: new AbortController().signal, timeoutMs: 500 });
    const started = Date.now();
    while (signals.size < 2 && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error("client gone"));
    await expect(cancelled).rejects.toThrow("client gone");
    const handlerSignal = signals.get("cancel me")!;
    const until = Date.now() + 2_000;
    while (!handlerSignal.aborted && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(handlerSignal.aborted).toBe(true);
    expect(signals.get("keep me")!.aborted).toBe(false);
    await expect(kept).rejects.toMatchObject({ category: "timeout" });
    expect(errors).toBe(0); // a cancelled request is not reported as a failure
  });
});

describe("bodies over the parking threshold", () => {
  /** Messages ever written to the criteria payload bucket (parked bodies are deleted once taken). */
  async function parkedSoFar(): Promise<number> {
    const jsm = await jetstreamManager(await client.ready());
    return (await jsm.streams.info(`OBJ_${payloadBucket("criteria")}`)).state.last_seq;
  }
  // An operation of this test's own, so that no contract limit on a real one shapes the body.
  const bulk: Operation<z.ZodObject<{ blob: z.ZodString }>, z.ZodObject<{ length: z.ZodNumber }>> = {
    service: "criteria",
    name: "bulk-test",
    request: z.object({ blob: z.string() }),
    response: z.object({ length: z.number() }),
  };
  const large = { blob: "q".repeat(SPILL_THRESHOLD_BYTES + 1) };

  beforeAll(async () => {
    await PayloadStore.create(await server.ready(), "criteria");
  });

  it("are parked only once a responder is known: with none, the usual service_unavailable and nothing stored", async () => {
    const before = await parkedSoFar();
    const error = await failure(callOperation(client, bulk, large, { timeoutMs: 5_000 }));
    expect(error.category).toBe("service_unavailable");
    expect(await parkedSoFar()).toBe(before);
  });

  it("travel through the service's payload bucket when a responder is there, and a probe runs no handler", async () => {
    const seen: number[] = [];
    await serve([
      handler(bulk, async (input) => {
        seen.push(input.blob.length);
        return { length: input.blob.length };
      }),
    ]);
    const before = await parkedSoFar();
    await expect(callOperation(client, bulk, large)).resolves.toEqual({ length: large.blob.length });
    expect(seen).toEqual([large.blob.length]); // the probe itself reached no handler
    expect(await parkedSoFar()).toBeGreaterThan(before);
  });

  it("answer a retryable service_unavailable when the service's payload bucket is at its size limit", async () => {
    const previous = process.env.NATS_QUOTA_PAYLOAD_MB;
    process.env.NATS_QUOTA_PAYLOAD_MB = "1";
    try {
      await PayloadStore.create(await server.ready(), "indexer");
    } finally {
      if (previous === undefined) delete process.env.NATS_QUOTA_PAYLOAD_MB;
      else process.env.NATS_QUOTA_PAYLOAD_MB = previous;
    }
    const full: typeof bulk = { ...bulk, service: "indexer" };
    await serve([handler(full, async (input) => ({ length: input.blob.length }))], undefined, "indexer");
    const error = await failure(callOperation(client, full, { blob: "q".repeat(1_500_000) }));
    expect(error).toMatchObject({ category: "service_unavailable", retryable: true });
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
