import { connect as tcpConnect } from "node:net";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { freePort, spawnService, stopProcess, waitForPort } from "../../scripts/lib/launch";
import { startStack, waitFor, type Stack } from "../support/stack";

/**
 * Bounds and surface against the real processes (docs/security.md, "Bounds and surface"): every
 * oversized, over-deep or malformed request is refused by the gateway with a 4xx before any
 * message reaches a service, so it costs no worker time; the mock job of the example
 * (2,000 papers × 200 criteria of 5,000 characters × 20 repetitions) completes instead of
 * pinning a worker; docs are closed by default; slow clients are cut off by the request timeouts
 * while a slow response is not.
 */

const papers = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, title: `Paper ${i}`, abstract: "An abstract." }));
const criteria = (n: number, chars = 40) =>
  Array.from({ length: n }, (_, i) => ({ name: `c${i}`, type: i % 2 ? "exclude" : "include", value: `Criterion ${i} `.padEnd(chars, "x") }));

/** Every message on the subjects a service or worker acts on: requests, job commands, job state and job data. */
class ServiceTraffic {
  readonly seen: string[] = [];
  readonly #subs: Subscription[];

  constructor(nc: NatsConnection) {
    this.#subs = ["litrev.rpc.>", "litrev.jobs.>", "$KV.litrev_jobs_screening.>", "$KV.litrev_jobs_indexer.>", "$O.litrev_jobdata_screening.>", "$O.litrev_jobdata_indexer.>"].map(
      (subject) => nc.subscribe(subject, { callback: (_err, msg) => void this.seen.push(msg.subject) }),
    );
  }

  /** Waits for the subscriptions to be in place and anything in flight to arrive, then forgets it. */
  async reset(nc: NatsConnection): Promise<void> {
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    this.seen.length = 0;
  }

  close(): void {
    for (const sub of this.#subs) sub.unsubscribe();
  }
}

describe("bounded work at the gateway, on a real stack", () => {
  let stack: Stack;
  let nc: NatsConnection;
  let traffic: ServiceTraffic;
  let provider: FakeProvider;

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: ["sk-bounds-test"] });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: {
        BODY_LIMIT_MB: "4",
        REQUEST_TIMEOUT_MS: "2000",
        HEADERS_TIMEOUT_MS: "1000",
        OPENAI_API_KEY: "sk-bounds-test",
        OPENAI_BASE_URL: provider.url,
      },
    });
    nc = await connect({ servers: stack.natsUrl });
    traffic = new ServiceTraffic(nc);
  });
  afterAll(async () => {
    traffic?.close();
    await nc?.close();
    await stack?.stop();
    await provider?.close();
  });

  it("refuses oversized and over-deep requests with a 4xx, and no service or worker sees a message", async () => {
    await traffic.reset(nc);
    const refused: [string, string, unknown, number, RegExp][] = [
      // Over the body size limit (4 MB here): 413 with the simple body.
      ["POST", "/v1/screening/jobs", { papers: papers(1), criteria: criteria(1, 5_000_000), mock: true }, 413, /exceeds the 4 MB limit/],
      // Over MAX_SCREENING_PAPERS (50,000 by default).
      ["POST", "/v1/screening/jobs", { papers: papers(50_001), mock: true }, 400, /List should have at most 50000 items/],
      // Within every per-field limit, but papers × repetitions × criteria over MAX_WORK_UNITS (20 million).
      ["POST", "/v1/screening/jobs", { papers: papers(20_000), criteria: criteria(60), repetitions: 20, mock: true }, 400, /papers × repetitions × criteria is 24,000,000/],
      // Over the repetitions and criteria limits.
      ["POST", "/v1/screening/jobs", { papers: papers(1), repetitions: 21, mock: true }, 400, /less than or equal to 20/],
      ["POST", "/v1/screening/jobs", { papers: papers(1), criteria: criteria(201), mock: true }, 400, /at most 200 items/],
      ["POST", "/v1/screening/jobs", { papers: papers(1), criteria: criteria(1, 5_001), mock: true }, 400, /at most 5000 characters/],
      // Indexer: records per job, per synchronous run, fields per request.
      ["POST", "/v1/indexer/jobs", { records: Array.from({ length: 50_001 }, (_, i) => ({ ID: i })), fields: fields(1) }, 400, /at most 50000 items/],
      ["POST", "/v1/indexer/run", { records: Array.from({ length: 1_001 }, (_, i) => ({ ID: i })), fields: fields(1) }, 400, /at most 1000 records/],
      ["POST", "/v1/indexer/jobs", { records: [{ ID: 1 }], fields: fields(51) }, 400, /at most 50 items/],
      // Criteria per request.
      ["POST", "/v1/criteria/consolidate", { criteria: Array.from({ length: 501 }, (_, i) => ({ id: i })) }, 400, /at most 500 items/],
      // `limit` on listings.
      ["GET", "/v1/screening/jobs?limit=1001", undefined, 400, /less than or equal to 1000/],
      ["GET", "/v1/indexer/jobs?limit=1001", undefined, 400, /less than or equal to 1000/],
    ];
    for (const [method, path, body, status, detail] of refused) {
      const res = await stack.http(method, path, body);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(status);
      expect(JSON.stringify(res.body.detail)).toMatch(detail);
    }

    // Very deep JSON, in a free-form field where it used to pass validation and end in a 500.
    const deep = `{"project_description":"p","existing_criteria":[{"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}]}`;
    const res = await stack.http("POST", "/v1/criteria/generate", undefined, { rawBody: deep });
    expect(res.status).toBe(400);
    expect(res.body.detail[0]).toMatchObject({ type: "json_too_deep", loc: ["body"] });

    await nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(traffic.seen).toEqual([]);
    // And no job exists: the listings are empty.
    expect((await stack.http("GET", "/v1/screening/jobs")).body).toEqual([]);
    expect((await stack.http("GET", "/v1/indexer/jobs")).body).toEqual([]);
  });

  it("answers the edge cases of the issue with 404 and 400, asking no service", async () => {
    await traffic.reset(nc);
    for (const kind of ["screening", "indexer"]) {
      for (const id of ["a%20b", "a.b", "%2A", "x".repeat(100)]) {
        expect(await stack.http("GET", `/v1/${kind}/jobs/${id}`), `${kind} ${id}`).toMatchObject({ status: 404, body: { detail: "Job not found" } });
      }
      for (const query of ["project_id=", "project_id=%20", "project_id=abc"]) {
        const res = await stack.http("GET", `/v1/${kind}/active-job?${query}`);
        expect(res.status, `${kind} ${query}`).toBe(400);
        expect(res.body.detail[0].loc).toEqual(["query", "project_id"]);
      }
    }
    await nc.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(traffic.seen).toEqual([]);
  });

  it("sees the traffic of a valid request (the watch above is not blind)", async () => {
    await traffic.reset(nc);
    const res = await stack.http("POST", "/v1/screening/estimate", { papers_count: 10 });
    expect(res.status).toBe(200);
    await nc.flush();
    await waitFor(() => traffic.seen.includes("litrev.rpc.screening.estimate"), 5_000, 50);
  });

  it("runs the issue's mock job (2,000 papers × 200 criteria of 5,000 characters × 20 repetitions) to completion", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: papers(2_000), criteria: criteria(200, 5_000), repetitions: 20, mock: true });
    expect(created.status).toBe(200);
    const done = await waitFor(
      async () => {
        const poll = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
        return poll.body.status === "completed" || poll.body.status === "failed" ? poll.body : null;
      },
      100_000,
      1_000,
    );
    expect(done.status).toBe("completed");
    expect(done.results).toHaveLength(2_000);
    expect(done.results[0].criteria_verdicts).toHaveLength(200);
  }, 120_000);

  it("accepts creation bodies at the spec's maxima (criteria, questions, field definitions) and completes them, never a 500", async () => {
    // 200 criteria with 1,000-character names and 5,000-character values and 50 questions of 2,000: 1.3 MB of job head.
    const bigCriteria = Array.from({ length: 200 }, (_, i) => ({ name: `c${i}`.padEnd(1_000, "n"), type: i % 2 ? "exclude" : "include", value: `Criterion ${i} `.padEnd(5_000, "x") }));
    const questions = Array.from({ length: 50 }, (_, i) => `Question ${i} `.padEnd(2_000, "q"));
    // 50 fields with 5,000-character descriptions and 20 examples of 500: 0.77 MB of field definitions.
    const fields = Array.from({ length: 50 }, (_, i) => ({
      name: `field_${i}`,
      description: `Field ${i} `.padEnd(5_000, "d"),
      data_type_primary: "text",
      examples: Array.from({ length: 20 }, (_, j) => `example ${j} `.padEnd(500, "e")),
    }));
    const records = Array.from({ length: 3 }, (_, i) => ({ ID: `r${i}`, Title: `Record ${i}`, Abstract: "An abstract." }));
    const created = [
      await stack.http("POST", "/v1/screening/jobs", { papers: papers(3), criteria: bigCriteria, questions, repetitions: 1, mock: true }),
      await stack.http("POST", "/v1/indexer/jobs", { records, fields, mock: true }),
    ];
    for (const [i, res] of created.entries()) {
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
      const path = i === 0 ? "screening" : "indexer";
      const done = await waitFor(
        async () => {
          const poll = await stack.http("GET", `/v1/${path}/jobs/${res.body.job_id}`);
          expect(poll.status, JSON.stringify(poll.body).slice(0, 500)).toBe(200);
          return poll.body.status === "completed" || poll.body.status === "failed" ? poll.body : null;
        },
        60_000,
        500,
      );
      expect(done.status, JSON.stringify(done.error ?? null)).toBe("completed");
      expect(i === 0 ? done.results : done.partial_results).toHaveLength(3);
      // Its report names every criterion or field asked, their texts cut to fit the job's record, and says so.
      const report = await stack.http("GET", `/v1/${path}/jobs/${res.body.job_id}/report?format=json`);
      expect(report.status).toBe(200);
      expect(i === 0 ? report.body.asked.criteria : report.body.asked.fields).toHaveLength(i === 0 ? 200 : 50);
      expect(report.body.asked.texts_cut_to_chars).toBeGreaterThan(0);
      const markdown = await stack.http("GET", `/v1/${path}/jobs/${res.body.job_id}/report`);
      expect(markdown.body).toMatch(/Each text above is cut to at most [\d,]+ characters \(too large for the job's record\)/);
    }
  }, 120_000);

  it("keeps /docs and /openapi.json behind the key (DOCS_PUBLIC is off by default)", async () => {
    expect((await stack.http("GET", "/openapi.json", undefined, { auth: false })).status).toBe(401);
    expect((await stack.http("GET", "/docs", undefined, { auth: false })).status).toBe(401);
    expect((await stack.http("GET", "/openapi.json")).status).toBe(200);
    expect((await stack.http("GET", "/health/ready", undefined, { auth: false })).body.checks).toHaveProperty("nats", "ok");
  });

  it("cuts off a client that sends its headers or body too slowly (408), but not a slow response", async () => {
    const { port } = new URL(stack.baseUrl);
    const stalled = async (partial: string) => {
      const socket = tcpConnect(Number(port), "127.0.0.1");
      let answer = "";
      socket.on("data", (chunk) => (answer += chunk.toString()));
      socket.write(partial);
      const started = Date.now();
      await new Promise<void>((resolve) => socket.on("close", () => resolve()));
      return { answer, ms: Date.now() - started };
    };
    // Headers never finished: cut after HEADERS_TIMEOUT_MS (1 s) plus the checking interval.
    const headers = await stalled("POST /v1/criteria/picos HTTP/1.1\r\nHost: x\r\nX-API-Key: test-service-key-0123456789\r\n");
    expect(headers.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(headers.ms).toBeLessThan(5_000);
    // A body announced but never sent in full: cut after REQUEST_TIMEOUT_MS (2 s).
    const body = await stalled(
      "POST /v1/criteria/picos HTTP/1.1\r\nHost: x\r\nX-API-Key: test-service-key-0123456789\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"project",
    );
    expect(body.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(body.ms).toBeLessThan(6_000);

    // A provider that takes 3.5 s: longer than the request timeout, and the response still arrives.
    provider.setBehaviour({ latencyMs: 3_500 });
    try {
      const slow = await stack.http("POST", "/v1/criteria/picos", { project_description: "Nudges for clinicians" });
      expect(slow.status).toBe(200);
      expect(slow.body.elements).toBeDefined();
    } finally {
      provider.setBehaviour({ latencyMs: 0 });
    }
  });
});

function fields(n: number) {
  return Array.from({ length: n }, (_, i) => ({ name: `f${i}`, description: "d", data_type_primary: "text" }));
}

describe("readiness of a real gateway whose NATS_URL carries credentials", () => {
  it("says NATS is not connected without echoing the URL, its user or its password", async () => {
    const [port, natsPort] = [await freePort(), await freePort()];
    const gateway = spawnService(
      "gateway",
      {
        PORT: String(port),
        HOST: "127.0.0.1",
        API_KEY: "bounds-readiness-key",
        JOB_KEY_SECRET: "bounds-readiness-job-key-secret",
        // Nothing listens there: the gateway stays up, degraded.
        NATS_URL: `nats://gateway-user:s3cret-pass@127.0.0.1:${natsPort}`,
        LOG_LEVEL: "silent",
      },
      { stdio: "ignore" },
    );
    try {
      await waitForPort(port, 30_000, gateway);
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      const text = await res.text();
      expect(res.status).toBe(503);
      expect(JSON.parse(text)).toMatchObject({ status: "degraded", checks: { nats: "error: not connected" } });
      expect(text).not.toMatch(/s3cret|gateway-user|nats:\/\//);
    } finally {
      await stopProcess(gateway, "SIGTERM", 5_000);
    }
  });
});
