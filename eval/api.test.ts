import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, ScreeningApi } from "./api";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A stand-in gateway answering from a list of (status, body) per path, recording what it got. */
async function gateway(answers: Record<string, [number, unknown][]>) {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const queue = answers[`${req.method} ${req.url}`] ?? [];
      const [status, payload] = queue.length > 1 ? queue.shift()! : (queue[0] ?? [404, { detail: "Not Found" }]);
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(payload));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

const job = (status: string, results: unknown = null) => ({ job_id: "j1", status, progress: 0, stage: "", results, config: { repetitions: 3 } });

describe("the harness's API client", () => {
  it("creates a job with the service key and the provider key, whatever the base URL's /v1 suffix", async () => {
    const g = await gateway({ "POST /v1/screening/jobs": [[200, { job_id: "j1", status: "pending", progress: 0, stage: "" }]] });
    const api = new ScreeningApi({ baseUrl: `${g.url}/v1/`, apiKey: "svc-key", providerKey: "sk-own" });
    expect(await api.createJob({ papers: [{ id: 1, title: "T", abstract: "" }], repetitions: 3 })).toBe("j1");
    expect(g.seen[0]!.headers["x-api-key"]).toBe("svc-key");
    expect(g.seen[0]!.headers["x-llm-api-key"]).toBe("sk-own");
    expect(JSON.parse(g.seen[0]!.body)).toMatchObject({ repetitions: 3, papers: [{ id: 1 }] });
  });

  it("polls through transient errors and returns the first terminal poll, results included", async () => {
    const g = await gateway({
      "GET /v1/screening/jobs/j1": [
        [200, job("running")],
        [503, { detail: "busy" }],
        [200, job("completed", [{ id: 1, final_score: 2 }])],
        [404, { detail: "Job not found" }],
      ],
    });
    const api = new ScreeningApi({ baseUrl: g.url, apiKey: "k" });
    const done = await api.waitForJob("j1", { timeoutMs: 10_000, intervalMs: 10 });
    expect(done.status).toBe("completed");
    expect(done.results).toEqual([{ id: 1, final_score: 2 }]);
    expect(g.seen).toHaveLength(3);
  });

  it("reads the job's provenance, and takes one it cannot read as none rather than failing the poll", async () => {
    const provenance = {
      model_requested: "llm-5-nano",
      model_resolved: "gpt-5-nano-2025-08-07",
      models_used: [{ model: "gpt-5-nano-2025-08-07", calls: 9 }],
      service_version: { version: "0.1.0", commit: "80f5099" },
      provider: { host: "api.openai.com", profile: "openai" },
      parameters: { labelling: { temperature: null, max_output_tokens: 800, reasoning_effort: "minimal" } },
      repetitions: 3,
      threshold: 1,
      decision_rule: "include when at least 1 of 3 votes says include",
      prompts: [{ name: "labelling", template_id: "screening/labelling@1", sha256: "a".repeat(64) }],
    };
    const g = await gateway({ "GET /v1/screening/jobs/j1": [[200, { ...job("completed", []), provenance }]], "GET /v1/screening/jobs/j2": [[200, { ...job("completed", []), provenance: { model_resolved: 5 } }]] });
    const api = new ScreeningApi({ baseUrl: g.url, apiKey: "k" });
    expect((await api.getJob("j1")).provenance).toEqual(provenance);
    expect((await api.getJob("j2")).provenance).toBeNull();
  });

  it("fails at once on a client error, naming the status and the detail", async () => {
    const g = await gateway({ "POST /v1/screening/jobs": [[401, { detail: { message: "Missing or invalid API key" } }]] });
    const error = await new ScreeningApi({ baseUrl: g.url, apiKey: "bad" }).createJob({ papers: [{ id: 1 }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).transient).toBe(false);
    expect((error as Error).message).toMatch(/HTTP 401 .*Missing or invalid API key/);
  });
});
