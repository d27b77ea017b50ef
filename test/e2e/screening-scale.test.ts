import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

const PAPERS = 10_000;
const ONE_MB = 1024 * 1024;

/**
 * A 10,000-paper job built from the Nagtegaal (2019) records (~18 MB of JSON) through a
 * nats-server at its default max_payload of 1 MB: the client refuses to publish anything larger,
 * so the job completing proves no message exceeded it (bodies, inputs and results travel through
 * JetStream Object Store in 128 KiB chunks).
 */
describe(`a ${PAPERS.toLocaleString("en")}-paper screening job (mock and live) with no NATS message over 1 MB`, () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 0, respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 1 },
      env: { OPENAI_API_KEY: "sk-scale", OPENAI_BASE_URL: provider.url, LLM_CONCURRENCY: "32" },
    });
    link = new NatsLink({ servers: stack.natsUrl, name: "screening-scale-test" });
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  it("the server enforces the default 1 MB max payload", async () => {
    const nc = await link.ready();
    expect(nc.info?.max_payload).toBe(ONE_MB);
    expect(() => nc.publish("litrev.test.too-big", new Uint8Array(ONE_MB + 1))).toThrow();
  });

  async function runJob(body: Record<string, unknown>) {
    const started = Date.now();
    const created = await stack.http("POST", "/v1/screening/jobs", body);
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
      expect(res.status).toBe(200);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 280_000, 500);
    return { final, seconds: (Date.now() - started) / 1000 };
  }

  it("completes in mock mode with a result for every paper", async () => {
    const papers = screeningPapers(PAPERS);
    expect(JSON.stringify(papers).length).toBeGreaterThan(15 * ONE_MB);
    const { final, seconds } = await runJob({ papers, criteria: CRITERIA, mock: true, clusters_type: "include" });
    expect(final.status, final.error).toBe("completed");
    expect(final.results).toHaveLength(PAPERS);
    expect(new Set(final.results.map((r: { id: string }) => r.id)).size).toBe(PAPERS);
    console.log(`[scale] mock ${PAPERS} papers: ${seconds.toFixed(1)} s`);
  }, 300_000);

  it("completes live against the fake provider with a result for every paper", async () => {
    const papers = screeningPapers(PAPERS);
    const { final, seconds } = await runJob({ papers, criteria: CRITERIA });
    expect(final.status, final.error).toBe("completed");
    expect(final.results).toHaveLength(PAPERS);
    expect(final.results.every((r: { votes: unknown[]; reasoning: string }) => r.votes.length === 5 && r.reasoning.length > 0)).toBe(true);
    expect(final.clusters.reduce((s: number, c: { count: number }) => s + c.count, 0)).toBe(PAPERS);
    console.log(`[scale] live ${PAPERS} papers: ${seconds.toFixed(1)} s, ${provider.chatRequests().length} provider calls`);
  }, 300_000);
});
