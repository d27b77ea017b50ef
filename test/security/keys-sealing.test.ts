import { randomUUID } from "node:crypto";
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeChatRequest, type FakeProvider, type RespondContext } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";

/**
 * Build 2 of the hardening issue: a client's provider key (`X-LLM-API-Key`) never crosses NATS or
 * lands in a stream, bucket, object or log line in clear text, on any route that forwards it; a
 * sealed token is bound to its request or job, so one captured from the wire is useless elsewhere.
 * Checked by listening to every subject (`>`) of the test's nats-server during a live run of every
 * forwarding route against the fake provider, then reading every stored message of every stream.
 */

const SERVER_KEY = "sk-security-server-key";
const CLIENT_KEY = `sk-client-${randomUUID()}`;
const FIELDS = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA", examples: [], examples_mode: "guide", depth: "minimal" },
];

const decoder = new TextDecoder();

interface Sighting {
  where: string;
  text: string;
}

/** Every sealed token seen on the wire, by subject, with the message's other headers. */
interface Captured {
  subject: string;
  token: string;
  headers: Record<string, string>;
}

describe("provider keys sealed end to end (real stack, every forwarding route)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let tap: NatsConnection;
  let messages = 0;
  const sightings: Sighting[] = [];
  const captured: Captured[] = [];

  const inspect = (where: string, bytes: Uint8Array | string) => {
    const text = typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("latin1");
    if (text.includes(CLIENT_KEY) || text.includes(SERVER_KEY)) sightings.push({ where, text: text.slice(0, 200) });
  };

  beforeAll(async () => {
    const screening = screeningResponder();
    const extraction = extractionResponder();
    provider = await startFakeProvider({
      validKeys: [SERVER_KEY, CLIENT_KEY],
      respond: (request: FakeChatRequest, context: RespondContext) => extraction(request) ?? screening(request, context),
    });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, LOG_LEVEL: "debug", LLM_MAX_ATTEMPTS: "2", LLM_DEADLINE_MS: "20000" },
    });
    tap = await connect({ servers: stack.natsUrl, name: "security-tap" });
    tap.subscribe(">", {
      callback: (_error, msg: Msg) => {
        messages++;
        const headerPairs: Record<string, string> = {};
        for (const name of msg.headers?.keys() ?? []) headerPairs[name.toLowerCase()] = msg.headers!.get(name);
        inspect(`message ${msg.subject}`, JSON.stringify(headerPairs) + decoder.decode(msg.data));
        const token = headerPairs["x-llm-api-key-sealed"];
        if (token) captured.push({ subject: msg.subject, token, headers: headerPairs });
      },
    });
    await tap.flush();
  });

  afterAll(async () => {
    await tap?.close();
    await stack?.stop();
    await provider?.close();
  });

  const withKey = { headers: { "x-llm-api-key": CLIENT_KEY } };
  const usedClientKey = () => provider.chatRequests().filter((r) => r.headers.authorization === `Bearer ${CLIENT_KEY}`).length;

  it("runs every route that forwards a provider key with the client's key, which reaches the provider and nothing else", async () => {
    const synchronous: [string, unknown][] = [
      ["/v1/criteria/analyze-question", { research_question: "Do reminders improve guideline adherence in nurses?" }],
      ["/v1/criteria/generate", { project_description: "Nudges for clinicians", criterion_type: "include" }],
      ["/v1/criteria/picos", { project_description: "Nudges for clinicians", research_questions: ["Do nudges work?"] }],
      ["/v1/criteria/refine-context", { description: "Nudges for clinicians" }],
      ["/v1/criteria/refine", { current_criteria: [{ id: 1, text: "Adults" }], conflicts: [{ paper: 3, human: "include", ai: "exclude" }] }],
      ["/v1/criteria/consolidate", { criteria: [{ id: 1, text: "Adults" }, { id: 2, text: "Grown-ups" }] }],
      ["/v1/indexer/run", { records: indexerRecords(2, { withAbstractOnly: true }), fields: FIELDS }],
      // Over the 512 KiB a NATS message carries: the body is parked in the payload store, the key still bound to it.
      ["/v1/indexer/run", { records: indexerRecords(400), fields: FIELDS, mode: "test" }],
      ["/v1/indexer/suggest-fields", { project_context: { description: "Nudging clinicians", research_questions: ["Do nudges work?"] } }],
      ["/v1/indexer/refine-fields", { fields: FIELDS }],
      ["/v1/indexer/group-tags", { field_name: "design", values: ["RCT", "cohort", "survey"] }],
    ];
    expect(JSON.stringify(synchronous[7]![1]).length).toBeGreaterThan(512 * 1024);
    for (const [path, body] of synchronous) {
      const before = usedClientKey();
      const res = await stack.http("POST", path, body, withKey);
      expect(res.status, `${path}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(200);
      expect(usedClientKey(), `${path} called the provider with the client's key`).toBeGreaterThan(before);
    }

    // Both job kinds: the key waits sealed in the command and is opened by the worker.
    const jobs: [string, unknown][] = [
      ["screening", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 1 }],
      ["indexer", { records: indexerRecords(2, { withAbstractOnly: true }), fields: FIELDS }],
    ];
    for (const [kind, body] of jobs) {
      const before = usedClientKey();
      const created = await stack.http("POST", `/v1/${kind}/jobs`, body, withKey);
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const final = await waitFor(async () => {
        const res = await stack.http("GET", `/v1/${kind}/jobs/${created.body.job_id}`, undefined, withKey);
        return res.body?.status === "completed" || res.body?.status === "failed" ? res.body : null;
      }, 90_000);
      expect(final.status, JSON.stringify(final).slice(0, 300)).toBe("completed");
      expect(usedClientKey(), `${kind} job used the client's key`).toBeGreaterThan(before);
      expect((await stack.http("GET", `/v1/${kind}/jobs`, undefined, withKey)).status).toBe(200);
    }
    // Routes that never call the provider get no key at all, even when the client sends one.
    for (const [path, body] of [
      ["/v1/screening/estimate", { papers_count: 10 }],
      ["/v1/indexer/estimate", { fields: FIELDS, record_count: 3 }],
    ] as const) {
      expect((await stack.http("POST", path, body, withKey)).status).toBe(200);
    }
    await tap.flush();

    expect(messages).toBeGreaterThan(100);
    const sealedOn = new Set(captured.map((c) => c.subject));
    for (const path of synchronous.map(([p]) => p)) {
      const [, , service, operation] = path.split("/");
      expect(sealedOn, `${path} carried a sealed key`).toContain(`litrev.rpc.${service === "indexer" ? "indexer" : "criteria"}.${operation}`);
    }
    expect(sealedOn).toContain("litrev.rpc.screening.create-job");
    expect(sealedOn).toContain("litrev.rpc.indexer.create-job");
    expect([...sealedOn].some((s) => s.includes("estimate") || s.includes("list-jobs"))).toBe(false);
    expect(sightings, "a provider key in clear on the wire").toEqual([]);
  });

  it("keeps no provider key in clear in any stream, KV bucket or object store", async () => {
    // JetStream's own API over plain request-reply: list the streams, then read each stored message.
    const api = async <T>(subject: string, body: unknown): Promise<T> =>
      JSON.parse(decoder.decode((await tap.request(subject, JSON.stringify(body), { timeout: 5_000 })).data)) as T;
    type StreamList = { streams: { config: { name: string }; state: { first_seq: number; last_seq: number } }[]; total: number };
    type StoredMessage = { message?: { subject: string; data?: string; hdrs?: string } };
    const streams: StreamList["streams"] = [];
    for (let offset = 0; offset === 0 || offset < 1_000; ) {
      const page = await api<StreamList>("$JS.API.STREAM.LIST", { offset });
      streams.push(...(page.streams ?? []));
      offset += page.streams?.length ?? 0;
      if (!page.streams?.length || offset >= page.total) break;
    }
    expect(streams.map((s) => s.config.name)).toEqual(expect.arrayContaining(["LITREV_JOBS_SCREENING", "KV_litrev_jobs_screening", "KV_litrev_config"]));
    let stored = 0;
    for (const stream of streams) {
      const { first_seq: first, last_seq: last } = stream.state;
      // Bounded: a test run writes a few thousand messages at most.
      for (let seq = first; seq <= last && seq - first < 50_000; seq++) {
        const { message } = await api<StoredMessage>(`$JS.API.STREAM.MSG.GET.${stream.config.name}`, { seq });
        if (!message) continue;
        stored++;
        const where = `stream ${stream.config.name} #${seq} (${message.subject})`;
        inspect(where, Buffer.from(message.data ?? "", "base64"));
        inspect(`${where} headers`, Buffer.from(message.hdrs ?? "", "base64"));
      }
    }
    expect(stored).toBeGreaterThan(10);
    expect(sightings, "a provider key in clear at rest").toEqual([]);
  });

  it("writes no provider key to any process's log", () => {
    const logs = stack.processes.map((p) => p.output()).join("\n");
    expect(logs.length).toBeGreaterThan(1_000); // debug level: a line per request and operation
    expect(logs).not.toContain(CLIENT_KEY);
    expect(logs).not.toContain(SERVER_KEY);
  });

  /** One request straight onto NATS, as someone who captured a token would send it. */
  async function replay(subject: string, body: unknown, set: Record<string, string>) {
    const hdrs = natsHeaders();
    for (const [name, value] of Object.entries(set)) hdrs.set(name, value);
    const reply = await tap.request(subject, JSON.stringify(body), { headers: hdrs, timeout: 10_000 });
    return JSON.parse(decoder.decode(reply.data)) as { ok: boolean; error?: { category: string; message: string } };
  }

  it("refuses a captured request token replayed under another request id, with another body or on another operation", async () => {
    const original = captured.find((c) => c.subject === "litrev.rpc.criteria.analyze-question")!;
    expect(original).toBeDefined();
    const body = { research_question: "Replayed?" };
    const before = usedClientKey();
    const otherRequest = await replay(original.subject, body, { "x-request-id": randomUUID(), "x-llm-api-key-sealed": original.token });
    expect(otherRequest).toMatchObject({ ok: false, error: { category: "auth" } });
    expect(otherRequest.error!.message).not.toContain(original.token);
    const otherBody = await replay(original.subject, body, { "x-request-id": original.headers["x-request-id"]!, "x-llm-api-key-sealed": original.token });
    expect(otherBody).toMatchObject({ ok: false, error: { category: "auth" } });
    const otherOperation = await replay("litrev.rpc.criteria.picos", { project_description: "p" }, {
      "x-request-id": original.headers["x-request-id"]!,
      "x-llm-api-key-sealed": original.token,
    });
    expect(otherOperation).toMatchObject({ ok: false, error: { category: "auth" } });
    // Only the identical request (subject, request id and body) opens it, until it expires. A key in clear is refused outright.
    const inClear = await replay(original.subject, body, { "x-request-id": randomUUID(), "x-llm-api-key": CLIENT_KEY });
    expect(inClear).toMatchObject({ ok: false, error: { category: "auth" } });
    expect(usedClientKey()).toBe(before);
  });

  it("refuses a captured job token for another job, another job kind, or a synchronous call", async () => {
    const original = captured.find((c) => c.subject === "litrev.rpc.screening.create-job")!;
    expect(original.headers["x-litrev-job-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const body = { papers: screeningPapers(2), criteria: CRITERIA, repetitions: 1 };
    const newJob = randomUUID();
    const otherJob = await replay(original.subject, body, { "x-request-id": randomUUID(), "x-litrev-job-id": newJob, "x-llm-api-key-sealed": original.token });
    expect(otherJob).toMatchObject({ ok: false, error: { category: "auth" } });
    expect((await stack.http("GET", `/v1/screening/jobs/${newJob}`)).status).toBe(404);
    const noJobId = await replay(original.subject, body, { "x-request-id": randomUUID(), "x-llm-api-key-sealed": original.token });
    expect(noJobId).toMatchObject({ ok: false });
    const otherKind = await replay("litrev.rpc.indexer.create-job", { records: indexerRecords(1), fields: FIELDS }, {
      "x-request-id": randomUUID(),
      "x-litrev-job-id": original.headers["x-litrev-job-id"]!,
      "x-llm-api-key-sealed": original.token,
    });
    expect(otherKind).toMatchObject({ ok: false, error: { category: "auth" } });
    const synchronous = await replay("litrev.rpc.criteria.analyze-question", { research_question: "q" }, {
      "x-request-id": original.headers["x-request-id"]!,
      "x-llm-api-key-sealed": original.token,
    });
    expect(synchronous).toMatchObject({ ok: false, error: { category: "auth" } });
  });
});
