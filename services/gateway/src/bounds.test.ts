import { PassThrough } from "node:stream";
import type { FastifyInstance, InjectOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import type { ReplyEnvelope, ServiceHealth } from "@litrev/contracts";
import type { NatsLink } from "@litrev/messaging";
import { offlineLink, testGateway } from "./testing";

/**
 * Bounds and surface at the gateway (docs/limits.md, docs/security.md): configured limits refused
 * with the spec's 400 body before anything is forwarded, malformed ids and queries refused at the
 * edge, docs open or closed by one setting, readiness without secrets or raw errors, timeouts set.
 */

const KEY = "bounds-test-key";
const auth = { "x-api-key": KEY };
const json = { ...auth, "content-type": "application/json" };

/** A connected link that records every request it is asked to make and answers `reply`. */
function recordingLink(reply: unknown = null, health: ServiceHealth[] = []) {
  const subjects: string[] = [];
  const nc = {
    request: async (subject: string) => {
      subjects.push(subject);
      return { data: new TextEncoder().encode(JSON.stringify({ ok: true, data: reply } satisfies ReplyEnvelope)) };
    },
    requestMany: async () =>
      (async function* () {
        for (const answer of health) yield { string: () => JSON.stringify(answer) };
      })(),
  };
  const link = { connected: true, connection: () => nc, ready: async () => nc, raw: nc, close: async () => undefined };
  return { link: link as unknown as NatsLink, subjects };
}

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function gateway(link: NatsLink, env: Record<string, string> = {}): Promise<FastifyInstance> {
  app = await testGateway(link, { API_KEY: KEY, ...env });
  return app;
}

async function send(target: FastifyInstance, options: InjectOptions) {
  const res = await target.inject(options);
  return { status: res.statusCode, body: res.body ? (JSON.parse(res.body) as any) : undefined, text: res.body }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const post = (url: string, payload: unknown): InjectOptions => ({
  method: "POST",
  url,
  headers: json,
  payload: typeof payload === "string" ? payload : JSON.stringify(payload),
});
const get = (url: string): InjectOptions => ({ method: "GET", url, headers: auth });

const papers = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, title: `t${i}`, abstract: "a" }));
const criteria = (n: number, chars = 10) =>
  Array.from({ length: n }, (_, i) => ({ name: `c${i}`, type: "include", value: "v".repeat(chars) }));

describe("configured request limits", () => {
  it("refuses a screening job over the configured papers, criteria, text length or repetitions, forwarding nothing", async () => {
    const { link, subjects } = recordingLink();
    const gw = await gateway(link, { MAX_SCREENING_PAPERS: "10", MAX_SCREENING_CRITERIA: "3", MAX_CRITERION_CHARS: "20", MAX_REPETITIONS: "4" });
    const cases: [unknown, unknown][] = [
      [{ papers: papers(11), mock: true }, { type: "too_long", loc: ["body", "papers"], msg: "List should have at most 10 items" }],
      [{ papers: papers(1), criteria: criteria(4), mock: true }, { type: "too_long", loc: ["body", "criteria"], msg: "List should have at most 3 items" }],
      [
        { papers: papers(1), criteria: [...criteria(1), ...criteria(1, 21)], mock: true },
        { type: "string_too_long", loc: ["body", "criteria", 1, "value"], msg: "String should have at most 20 characters" },
      ],
      [{ papers: papers(1), repetitions: 5, mock: true }, { type: "less_than_equal", loc: ["body", "repetitions"], msg: "Input should be less than or equal to 4" }],
    ];
    for (const [body, issue] of cases) {
      expect(await send(gw, post("/v1/screening/jobs", body))).toMatchObject({ status: 400, body: { detail: [issue] } });
    }
    expect(subjects).toEqual([]);
  });

  it("refuses papers × repetitions × criteria over MAX_WORK_UNITS, and accepts exactly the limit", async () => {
    const { link, subjects } = recordingLink({ job_id: "x", status: "pending", progress: 0, stage: "" });
    const gw = await gateway(link, { MAX_WORK_UNITS: "600" });
    const over = await send(gw, post("/v1/screening/jobs", { papers: papers(20), criteria: criteria(6), repetitions: 6, mock: true }));
    expect(over.status).toBe(400);
    expect(over.body.detail).toEqual([{ type: "value_error", loc: ["body"], msg: expect.stringContaining("papers × repetitions × criteria is 720 (20 × 6 × 6)") }]);
    expect(subjects).toEqual([]);
    const at = await send(gw, post("/v1/screening/jobs", { papers: papers(20), criteria: criteria(6), repetitions: 5, mock: true }));
    expect(at.status).toBe(200);
    expect(subjects).toHaveLength(1);
  });

  it("refuses a job whose results could not be returned in one response (MAX_RESULTS_MCHARS)", async () => {
    const { link, subjects } = recordingLink();
    const gw = await gateway(link, { MAX_RESULTS_MCHARS: "1" });
    // 2,000 papers × 10 criteria with 400-character names: about 10 million characters of verdicts.
    const named = criteria(10).map((c, i) => ({ ...c, name: `${i}`.padEnd(400, "n") }));
    const res = await send(gw, post("/v1/screening/jobs", { papers: papers(2_000), criteria: named, mock: true }));
    expect(res.status).toBe(400);
    expect(res.body.detail[0].msg).toMatch(/results of this job would take about \d+ million characters/);
    const indexer = await send(gw, post("/v1/indexer/jobs", { records: Array.from({ length: 5_000 }, (_, i) => ({ ID: i })), fields: fields(10) }));
    expect(indexer.status).toBe(400);
    expect(subjects).toEqual([]);
  });

  it("refuses indexer records and fields over their configured limits, with the synchronous-run message", async () => {
    const { link, subjects } = recordingLink();
    const gw = await gateway(link, { MAX_INDEXER_RUN_RECORDS: "5", MAX_INDEXER_JOB_RECORDS: "8", MAX_INDEXER_FIELDS: "2" });
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ ID: i, Title: "t", Abstract: "a" }));
    const run = await send(gw, post("/v1/indexer/run", { records: records(6), fields: fields(1) }));
    expect(run).toMatchObject({ status: 400, body: { detail: [{ loc: ["body", "records"], msg: expect.stringContaining("at most 5 records (6 requested)") }] } });
    const job = await send(gw, post("/v1/indexer/jobs", { records: records(9), fields: fields(1) }));
    expect(job).toMatchObject({ status: 400, body: { detail: [{ type: "too_long", loc: ["body", "records"] }] } });
    const many = await send(gw, post("/v1/indexer/estimate", { record_count: 1, fields: fields(3) }));
    expect(many).toMatchObject({ status: 400, body: { detail: [{ type: "too_long", loc: ["body", "fields"] }] } });
    expect(subjects).toEqual([]);
  });

  it("bounds `limit` on listings by MAX_LIST_LIMIT", async () => {
    const { link, subjects } = recordingLink([]);
    const gw = await gateway(link, { MAX_LIST_LIMIT: "100" });
    expect(await send(gw, get("/v1/screening/jobs?limit=101"))).toMatchObject({
      status: 400,
      body: { detail: [{ type: "less_than_equal", loc: ["query", "limit"], msg: "Input should be less than or equal to 100" }] },
    });
    expect(await send(gw, get("/v1/indexer/jobs?limit=100"))).toMatchObject({ status: 200, body: [] });
    expect(subjects).toHaveLength(1);
  });

  it("refuses JSON nested deeper than MAX_JSON_DEPTH with a 400 before parsing, where it used to end in a 500", async () => {
    const { link, subjects } = recordingLink({ criteria: [] });
    const gw = await gateway(link);
    const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    // Deep inside a free-form field, the body passes validation and would overflow the stack when forwarded.
    const body = `{"project_description":"p","existing_criteria":[{"x":${deep(100_000)}}]}`;
    const res = await send(gw, post("/v1/criteria/generate", body));
    expect(res).toMatchObject({ status: 400, body: { detail: [{ type: "json_too_deep", loc: ["body"] }] } });
    // Within the limit (the body's own 3 levels plus 60) it goes through.
    expect((await send(gw, post("/v1/criteria/generate", `{"project_description":"p","existing_criteria":[{"x":${deep(60)}}]}`))).status).toBe(200);
    expect(subjects).toHaveLength(1);
  });
});

function fields(n: number) {
  return Array.from({ length: n }, (_, i) => ({ name: `f${i}`, description: "d", data_type_primary: "text" }));
}

describe("statuses at the edge", () => {
  it("answers 404 for a job id that is not a UUID, on both job kinds, without asking anyone", async () => {
    const { link, subjects } = recordingLink();
    const gw = await gateway(link);
    for (const url of ["/v1/screening/jobs/a%20b", "/v1/indexer/jobs/a%20b", "/screening/jobs/a.b", "/v1/indexer/jobs/*", "/v1/screening/jobs/%3E"]) {
      expect(await send(gw, get(url))).toMatchObject({ status: 404, body: { detail: "Job not found" } });
    }
    expect(subjects).toEqual([]);
  });

  it("answers 400 for active-job with an empty or non-integer project_id", async () => {
    const { link, subjects } = recordingLink(null);
    const gw = await gateway(link);
    for (const query of ["project_id=", "project_id=%20", "project_id=1.5", "project_id=abc", ""]) {
      const res = await send(gw, get(`/v1/screening/active-job?${query}`));
      expect(res.status).toBe(400);
      expect(res.body.detail[0].loc).toEqual(["query", "project_id"]);
    }
    expect(subjects).toEqual([]);
  });
});

describe("docs and OpenAPI", () => {
  it("are behind the key by default and open with DOCS_PUBLIC=true", async () => {
    const closed = await gateway(offlineLink());
    expect((await send(closed, { method: "GET", url: "/openapi.json" })).status).toBe(401);
    expect((await send(closed, { method: "GET", url: "/docs" })).status).toBe(401);
    expect((await send(closed, get("/openapi.json"))).status).toBe(200);
    await app?.close();
    const open = await gateway(offlineLink(), { DOCS_PUBLIC: "true" });
    expect((await send(open, { method: "GET", url: "/openapi.json" })).status).toBe(200);
    expect((await open.inject({ method: "GET", url: "/docs/" })).statusCode).toBe(200);
    // Health stays public either way.
    expect((await send(open, { method: "GET", url: "/health" })).status).toBe(200);
  });
});

describe("the OpenAPI document", () => {
  it("shows the limits this deployment configured", async () => {
    const gw = await gateway(offlineLink(), { MAX_SCREENING_PAPERS: "10", MAX_CRITERION_CHARS: "20", MAX_LIST_LIMIT: "100", MAX_INDEXER_FIELDS: "7" });
    const doc = (await send(gw, get("/openapi.json"))).body;
    const body = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema;
    expect(body("/v1/screening/jobs").properties.papers.maxItems).toBe(10);
    expect(body("/v1/screening/jobs").properties.criteria.anyOf[0].items.properties.value.maxLength).toBe(20);
    expect(body("/v1/indexer/jobs").properties.fields.maxItems).toBe(7);
    expect(doc.paths["/v1/indexer/jobs"].get.parameters.find((p: { name: string }) => p.name === "limit").schema.maximum).toBe(100);
  });
});

describe("readiness", () => {
  it("never shows NATS_URL (or its credentials) while NATS is down", async () => {
    const gw = await gateway(offlineLink(), { NATS_URL: "nats://gateway-user:s3cret-pass@nats.internal:4222" });
    const res = await send(gw, { method: "GET", url: "/health/ready" });
    expect(res.status).toBe(503);
    expect(res.body.checks.nats).toBe("error: not connected");
    expect(res.text).not.toMatch(/s3cret|gateway-user|nats\.internal/);
  });

  it("shows fixed messages for database and provider failures, never the raw error", async () => {
    const health: ServiceHealth[] = [
      { service: "screening", instance: "s1", database: "error: MongoServerSelectionError: connect ECONNREFUSED mongo-0.db:27017 user=admin", models: "error: could not list the provider's models (401 sk-...abcd)" },
      { service: "indexer", instance: "i1", database: "ok", models: "missing: gpt-x (llm-x)" },
    ];
    const { link } = recordingLink(null, health);
    const res = await send(await gateway(link, { OPENAI_API_KEY: "sk-configured" }), { method: "GET", url: "/health/ready" });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      status: "degraded",
      checks: expect.objectContaining({
        database: "error: database unreachable (screening)",
        openai_key: "configured",
        nats: "ok",
        models: "error: could not list the provider's models (screening); missing: gpt-x (llm-x) (indexer)",
      }),
    });
    expect(res.text).not.toMatch(/ECONNREFUSED|mongo-0|admin|abcd/);
  });
});

describe("timeouts", () => {
  it("do not cut a response that streams for longer than the request timeout", async () => {
    const gw = await gateway(offlineLink(), { REQUEST_TIMEOUT_MS: "1000", HEADERS_TIMEOUT_MS: "1000" });
    // A stand-in for a long poll or an event stream: ten chunks, 250 ms apart.
    gw.get("/v1/test-stream", (_request, reply) => {
      const stream = new PassThrough();
      let sent = 0;
      const timer = setInterval(() => {
        stream.write(`chunk ${sent}\n`);
        if (++sent === 10) {
          clearInterval(timer);
          stream.end();
        }
      }, 250);
      return reply.type("text/plain").send(stream);
    });
    const address = await gw.listen({ port: 0, host: "127.0.0.1" });
    const started = Date.now();
    const res = await fetch(`${address}/v1/test-stream`, { headers: auth, signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text.trim().split("\n")).toHaveLength(10);
    expect(Date.now() - started).toBeGreaterThan(2_000);
  });


  it("sets the request, header, keep-alive and connection timeouts from the environment", async () => {
    const gw = await gateway(offlineLink(), { REQUEST_TIMEOUT_MS: "90000", HEADERS_TIMEOUT_MS: "20000", KEEP_ALIVE_TIMEOUT_MS: "5000", CONNECTION_TIMEOUT_MS: "600000" });
    expect(gw.server.requestTimeout).toBe(90_000);
    expect(gw.server.headersTimeout).toBe(20_000);
    expect(gw.server.keepAliveTimeout).toBe(5_000);
    expect(gw.server.timeout).toBe(600_000);
  });
});
