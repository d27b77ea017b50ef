import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_REQUEST_LIMITS, PAPER_JSON_BYTES, RequestLimits } from "@litrev/contracts";
import { bodyLimitBytes } from "./body-parser";
import { offlineLink, testGateway } from "./testing";

/**
 * Request bodies at the gateway's edge (docs/limits.md): measured as they arrive and refused as
 * soon as they exceed a limit, before the rest is read or anything is parsed; per-owner limits
 * answered with the spec's 429.
 */

const KEY = "body-parser-test-key";
const URL = "/v1/criteria/analyze-question";

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function gateway(env: Record<string, string> = {}): Promise<FastifyInstance> {
  app = await testGateway(offlineLink(), { API_KEY: KEY, ...env });
  return app;
}

const post = (target: FastifyInstance, payload: string, key = KEY) =>
  target.inject({ method: "POST", url: URL, headers: { "x-api-key": key, "content-type": "application/json" }, payload });

describe("body limits", () => {
  it("derives the default body limit from the largest legitimate request; BODY_LIMIT_MB overrides it", () => {
    const mib = 1024 * 1024;
    expect(bodyLimitBytes(DEFAULT_REQUEST_LIMITS)).toBe(100 * mib);
    // A full screening job of average papers fits; fewer papers allowed, a smaller body.
    expect(bodyLimitBytes(DEFAULT_REQUEST_LIMITS)).toBeGreaterThan(DEFAULT_REQUEST_LIMITS.MAX_SCREENING_PAPERS * PAPER_JSON_BYTES);
    const small = RequestLimits.parse({ MAX_SCREENING_PAPERS: "5000", MAX_INDEXER_JOB_RECORDS: "5000" });
    expect(bodyLimitBytes(small)).toBe(12 * mib);
    expect(bodyLimitBytes({ ...small, BODY_LIMIT_MB: 7 })).toBe(7 * mib);
  });

  it("refuses a body of more than MAX_JSON_VALUES values with a 413 naming the limit, and admits one at it", async () => {
    const gw = await gateway({ MAX_JSON_VALUES: "1000" });
    // research_question is the only field the route keeps: the extra one is where the values hide.
    const body = (n: number) => `{"research_question":"q","x":[${Array(n).fill("[]").join(",")}]}`;
    const over = await post(gw, body(996));
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({ detail: "Request body holds more than 1,000 JSON values (MAX_JSON_VALUES, docs/limits.md)" });
    // 1 + 2 + 2 + 995 values: within the limit, so it is parsed (and then needs NATS: 503).
    expect((await post(gw, body(995))).statusCode).toBe(503);
  });

  it("keeps the depth, size and syntax answers of before", async () => {
    const gw = await gateway({ BODY_LIMIT_MB: "1", MAX_JSON_DEPTH: "8" });
    expect((await post(gw, `{"research_question":"q","x":${"[".repeat(9)}${"]".repeat(9)}}`)).json()).toMatchObject({ detail: [{ type: "json_too_deep", loc: ["body"] }] });
    const large = await post(gw, JSON.stringify({ research_question: "x".repeat(1_100_000) }));
    expect(large.statusCode).toBe(413);
    expect(large.json()).toEqual({ detail: "Request body exceeds the 1 MB limit (BODY_LIMIT_MB, docs/limits.md)" });
    expect((await post(gw, '{"research_question": "q",')).json()).toMatchObject({ detail: [{ type: "json_invalid" }] });
    expect((await post(gw, "  \n ")).json()).toMatchObject({ detail: [{ type: "missing", loc: ["body"] }] });
  });

  it("answers a body of tiny values before the client has sent the rest of it", async () => {
    const gw = await gateway({ MAX_JSON_VALUES: "100000" });
    await gw.listen({ port: 0, host: "127.0.0.1" });
    const { port } = gw.server.address() as AddressInfo;
    const chunk = Buffer.from("[],".repeat(20_000));
    // A 99 MB body announced; the client sends 1 MB, then waits for an answer without ending it.
    const answer = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
      let sent = 0;
      const req = httpRequest({ port, method: "POST", path: URL, headers: { "x-api-key": KEY, "content-length": String(99 * 1024 * 1024) } }, (res) => {
        let body = "";
        res.on("data", (data: Buffer) => (body += data.toString()));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, body, sent });
          req.destroy(); // the gateway would read on (and drop) the rest of the body
        });
      });
      req.on("error", reject);
      req.write('{"research_question":"q","x":[');
      for (; sent < 1_000_000; sent += chunk.length) req.write(chunk);
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toMatch(/more than 100,000 JSON values/);
  });
});

describe("per-owner limits", () => {
  it("answers 429 with Retry-After in the spec's classified body once an owner's rate is spent, leaving reads alone", async () => {
    const gw = await gateway({ KEY_RATE_PER_S: "0.5", KEY_RATE_BURST: "2" });
    expect((await post(gw, '{"research_question":"q"}')).statusCode).toBe(503);
    expect((await post(gw, '{"research_question":"q"}')).statusCode).toBe(503);
    // The third is refused before its body is read: even a malformed one.
    const refused = await post(gw, "{not json");
    expect(refused.statusCode).toBe(429);
    expect(refused.headers["retry-after"]).toBe("2");
    expect(refused.json()).toEqual({
      detail: { message: expect.stringMatching(/More than 0.5 requests per second .*KEY_RATE_PER_S/), error_code: "rate_limit", error_reason: "rate_limit", retryable: true },
    });
    // Reads are not counted; a wrong key is still a 401, not a 429.
    expect((await gw.inject({ method: "GET", url: "/v1/screening/jobs", headers: { "x-api-key": KEY } })).statusCode).not.toBe(429);
    expect((await post(gw, '{"research_question":"q"}', "wrong-key")).statusCode).toBe(401);
  });

  it("closes the connection of a refused request whose large body is still arriving, rather than reading the rest to drop it (the client gets its 429)", async () => {
    const gw = await gateway({ KEY_RATE_PER_S: "0.5", KEY_RATE_BURST: "1" });
    await gw.listen({ port: 0, host: "127.0.0.1" });
    const { port } = gw.server.address() as AddressInfo;
    /** A 4 MB body announced (or a chunked one, of no declared length); 256 KB sent, then the rest only if the gateway reads on. */
    const refusedUpload = (chunked = false) =>
      new Promise<{ status: number; connection: string | undefined; retryAfter: string | undefined }>((resolve, reject) => {
        const req = httpRequest({ port, method: "POST", path: URL, headers: { "x-api-key": KEY, ...(chunked ? {} : { "content-length": String(4 * 1024 * 1024) }) } }, (res) => {
          res.resume();
          res.on("end", () => {
            resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, retryAfter: res.headers["retry-after"] });
            req.destroy();
          });
        });
        req.on("error", reject);
        req.write(Buffer.alloc(256 * 1024, " "));
      });
    expect((await post(gw, '{"research_question":"q"}')).statusCode).toBe(503); // the one request the rate allows
    const refused = await refusedUpload();
    expect(refused).toEqual({ status: 429, connection: "close", retryAfter: "2" });
    expect(await refusedUpload(true)).toMatchObject({ status: 429, connection: "close" });
    // A small refused body stays on its connection (Node reads its few bytes).
    const small = await post(gw, '{"research_question":"q"}');
    expect(small.statusCode).toBe(429);
    expect(small.headers.connection).not.toBe("close");
  });

  it("counts a request in flight until its answer is sent", async () => {
    const gw = await gateway({ KEY_CONCURRENCY: "1", KEY_RATE_PER_S: "0" });
    // Each request is answered (503, NATS unreachable) before the next starts: never two at once.
    for (let i = 0; i < 5; i++) expect((await post(gw, '{"research_question":"q"}')).statusCode).toBe(503);
    const both = await Promise.all([post(gw, '{"research_question":"q"}'), post(gw, '{"research_question":"q"}')]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([429, 503]);
  });

  it("bounds the bytes of bodies one owner has in memory at once to twice the body limit", async () => {
    const gw = await gateway({ BODY_LIMIT_MB: "1" });
    await gw.listen({ port: 0, host: "127.0.0.1" });
    const { port } = gw.server.address() as AddressInfo;
    const SIZE = 900 * 1024;
    /** A valid body of SIZE bytes, sent in two parts: all but 100 KB now, the rest on `finish()`. */
    const upload = () => {
      const text = Buffer.from(`{"research_question":"q","pad":"${"x".repeat(SIZE - 34)}"}`);
      const req = httpRequest({ port, method: "POST", path: URL, headers: { "x-api-key": KEY, "content-length": String(text.length) } });
      const answer = new Promise<{ status: number; body: string; retryAfter?: string }>((resolve, reject) => {
        req.on("response", (res) => {
          let body = "";
          res.on("data", (data: Buffer) => (body += data.toString()));
          res.on("end", () => {
            resolve({ status: res.statusCode ?? 0, body, ...(res.headers["retry-after"] ? { retryAfter: String(res.headers["retry-after"]) } : {}) });
            req.destroy();
          });
        });
        req.on("error", reject);
      });
      req.write(text.subarray(0, SIZE - 100 * 1024));
      return { answer, finish: () => req.end(text.subarray(SIZE - 100 * 1024)), abort: () => req.destroy() };
    };
    const settle = () => new Promise((r) => setTimeout(r, 300));
    const a = upload();
    const b = upload();
    await settle();
    // 1.6 MB held for two unfinished bodies: a third crosses 2 MB and is refused, the two are not.
    const c = upload();
    expect(await c.answer).toMatchObject({ status: 429, retryAfter: "1", body: expect.stringMatching(/more than 2 MB of request bodies at once/) });
    a.finish();
    b.finish();
    expect((await a.answer).status).toBe(503);
    expect((await b.answer).status).toBe(503);
    // Answered bodies are no longer held, nor are those of clients gone before the end.
    for (let i = 0; i < 3; i++) {
      const gone = upload();
      gone.answer.catch(() => undefined);
      await settle();
      gone.abort();
    }
    await settle();
    const d = upload();
    const e = upload();
    d.finish();
    e.finish();
    expect((await d.answer).status).toBe(503);
    expect((await e.answer).status).toBe(503);
  });
});
