import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { freePort } from "../../scripts/lib/launch";
import { startStack, waitFor, type Stack } from "../support/stack";

/** Each process's Prometheus endpoint (METRICS_PORT) shows the metrics its work produced. */
describe("metrics", () => {
  let provider: FakeProvider;
  let stack: Stack;
  const ports = { criteria: 0, screening: 0 };
  const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

  beforeAll(async () => {
    provider = await startFakeProvider({});
    stack = await startStack({
      services: {},
      env: { OPENAI_API_KEY: "sk-metrics-test", OPENAI_BASE_URL: provider.url },
    });
    ports.criteria = await freePort();
    ports.screening = await freePort();
    await stack.startService("criteria", { METRICS_PORT: String(ports.criteria), METRICS_HOST: "127.0.0.1" });
    await stack.startService("screening", { METRICS_PORT: String(ports.screening), METRICS_HOST: "127.0.0.1" });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("counts provider calls, tokens and cost in the service that made them", async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do reminders help nurses?" });
    expect(res.status).toBe(200);
    const text = await waitFor(async () => {
      const body = await scrape(ports.criteria);
      return body.includes("litrev_provider_calls") ? body : undefined;
    });
    expect(text).toMatch(/litrev_provider_calls_total\{[^}]*outcome="ok"[^}]*\} 1/);
    expect(text).toMatch(/litrev_provider_tokens_total\{[^}]*kind="input"/);
    expect(text).toMatch(/litrev_provider_cost_usd/);
  });

  it("counts jobs by status and their duration, and reports the queue depth", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", {
      papers: [{ id: 1, title: "Reminders for nurses", abstract: "A trial." }],
      mock: true,
    });
    expect(created.status).toBe(200);
    await waitFor(async () => (await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`)).body.status === "completed");
    const text = await waitFor(async () => {
      const body = await scrape(ports.screening);
      return /litrev_jobs\{[^}]*status="completed"[^}]*\} 1/.test(body) ? body : undefined;
    });
    expect(text).toMatch(/litrev_job_duration_ms_count\{[^}]*status="completed"[^}]*\} 1/);
    expect(text).toMatch(/litrev_queue_depth\{[^}]*service="screening"[^}]*\} 0/);
  });
});
