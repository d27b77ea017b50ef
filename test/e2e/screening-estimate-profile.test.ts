import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_PROFILES, profileModelPrices, startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { screeningEstimateTokens } from "@litrev/contracts";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * One estimate formula for the route, the job and the listing (issue 30): against a provider that
 * ignores `n` — learned from its replies, not declared — `estimated_cost_usd` stays the spec's
 * formula everywhere, before and after the service has learned it; the service's own prediction of
 * the bill is the additional `forecast_cost_usd`, which does follow the provider.
 */

const PAPERS = 8;
const REPETITIONS = 3;
// profileModelPrices(): the profile's model at USD 0.05 input / 0.4 output per 1M tokens.
const PRICE = { input: 0.05, output: 0.4 };
const spec = screeningEstimateTokens(PAPERS, REPETITIONS, CRITERIA.length);
const specCost = Math.round(((spec.input * PRICE.input + spec.output * PRICE.output) / 1e6) * 1e6) / 1e6;

describe("the spec's estimate to the letter against a provider that ignores n (learned; real nats-server)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ profile: "ollama", latencyMs: 0, respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 1 },
      env: {
        OPENAI_API_KEY: "ollama",
        OPENAI_BASE_URL: provider.baseUrl("ollama"),
        LLM_MODEL_ALIASES: JSON.stringify(PROVIDER_PROFILES.ollama.aliases),
        MODEL_PRICES: profileModelPrices(),
        JOB_ACK_WAIT_MS: "5000",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const runJob = async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: REPETITIONS });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 90_000, 50);
  };

  it("route, both jobs and the listing carry the formula's figure; the forecast follows the provider", async () => {
    const first = await runJob();
    expect(first.status, first.error).toBe("completed");
    expect(Math.abs(first.estimated_cost_usd - specCost)).toBeLessThan(1e-6);

    // The first job's calls showed the provider answers one choice for n > 1.
    const estimate = await stack.http("POST", "/v1/screening/estimate", { papers_count: PAPERS, repetitions: REPETITIONS, criteria_count: CRITERIA.length });
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    expect(estimate.body).toMatchObject({ estimated_input_tokens: spec.input, estimated_output_tokens: spec.output, forecast_provider_n: "ignored" });
    expect(Math.abs(estimate.body.estimated_cost_usd - specCost)).toBeLessThan(1e-6);
    expect(estimate.body.forecast_input_tokens).toBeGreaterThan(spec.input);
    expect(estimate.body.forecast_cost_usd).toBeGreaterThan(estimate.body.estimated_cost_usd);

    const second = await runJob();
    expect(second.status, second.error).toBe("completed");
    expect(Math.abs(second.estimated_cost_usd - specCost)).toBeLessThan(1e-6);
    expect(second).toMatchObject({ forecast_provider_n: "ignored", forecast_cost_usd: estimate.body.forecast_cost_usd });

    const listed = (await stack.http("GET", "/v1/screening/jobs")).body as { job_id: string; estimated_cost_usd: number; forecast_cost_usd: number | null }[];
    for (const job of [first, second]) {
      const item = listed.find((entry) => entry.job_id === job.job_id)!;
      expect(Math.abs(item.estimated_cost_usd - specCost)).toBeLessThan(1e-6);
    }
    expect(listed.find((entry) => entry.job_id === second.job_id)!.forecast_cost_usd).toBe(estimate.body.forecast_cost_usd);

    // The ceiling is checked against the formula's figure: a ceiling at it admits the job.
    const capped = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: REPETITIONS, max_estimated_cost_usd: specCost, mock: false });
    expect(capped.status, JSON.stringify(capped.body)).toBe(200);
  });

  it("keeps what it learned across a restart: the first forecast of a fresh screening process already assumes n is ignored", async () => {
    const ready = await stack.http("GET", "/health/ready", undefined, { auth: false });
    expect(ready.body.checks["provider_n:screening"]).toBe("ignored (learned from a reply)");
    const old = stack.processes.find((p) => p.name.startsWith("screening"))!;
    await stack.stopProcess(old);
    await stack.startService("screening");
    const estimate = await waitFor(async () => {
      const res = await stack.http("POST", "/v1/screening/estimate", { papers_count: PAPERS, repetitions: REPETITIONS, criteria_count: CRITERIA.length });
      return res.status === 200 ? res.body : null;
    }, 30_000, 100);
    expect(estimate.forecast_provider_n).toBe("ignored");
    expect(Math.abs(estimate.estimated_cost_usd - specCost)).toBeLessThan(1e-6);
    const after = await stack.http("GET", "/health/ready", undefined, { auth: false });
    expect(after.body.checks["provider_n:screening"]).toBe("ignored (learned by an earlier run, kept in the config bucket)");
  });
});
