import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_PROFILES, profileModelPrices, startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { screeningEstimateTokens } from "@litrev/contracts";
import { startStack, type Stack } from "../support/stack";

/**
 * The estimate, the job's estimated_cost_usd and the cost ceiling follow the provider's handling
 * of `n` (issue 21): against a server that ignores it, each vote is a request that sends the paper
 * again, so all three count more input than the spec's formula (the bill where `n` is honoured).
 */

const body = { papers_count: 200, repetitions: 5, criteria_count: 3 };

describe("screening estimate against a provider that ignores n (LLM_PROVIDER_N=ignored, real nats-server)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ profile: "ollama" });
    stack = await startStack({
      services: { screening: 1 },
      env: {
        OPENAI_API_KEY: "ollama",
        OPENAI_BASE_URL: provider.baseUrl("ollama"),
        LLM_MODEL_ALIASES: JSON.stringify(PROVIDER_PROFILES.ollama.aliases),
        MODEL_PRICES: profileModelPrices(),
        LLM_PROVIDER_N: "ignored",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("counts the paper once per vote, and admission holds a job's ceiling to that figure", async () => {
    const estimate = await stack.http("POST", "/v1/screening/estimate", body);
    expect(estimate.status, JSON.stringify(estimate.body)).toBe(200);
    const spec = screeningEstimateTokens(body.papers_count, body.repetitions, body.criteria_count);
    expect(estimate.body.estimated_input_tokens).toBeGreaterThan(spec.input);
    expect(estimate.body.estimated_output_tokens).toBe(spec.output);

    // A ceiling above the spec formula's cost but below this provider's estimate is refused.
    const price = { input: 0.05, output: 0.4 }; // profileModelPrices(), USD per 1M tokens
    const specCost = (spec.input * price.input + spec.output * price.output) / 1e6;
    const ceiling = estimate.body.estimated_cost_usd * 0.95;
    expect(ceiling).toBeGreaterThan(specCost);
    const papers = Array.from({ length: body.papers_count }, (_, i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: "A trial." }));
    const criteria = Array.from({ length: body.criteria_count }, (_, i) => ({ name: `C${i}`, type: "include", value: `Criterion ${i}` }));
    const refused = await stack.http("POST", "/v1/screening/jobs", { papers, criteria, repetitions: body.repetitions, max_estimated_cost_usd: ceiling });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.detail).toContain(`$${estimate.body.estimated_cost_usd.toFixed(6)}`);
    // The job a client does create carries the same estimate.
    const mock = await stack.http("POST", "/v1/screening/jobs", { papers, criteria, repetitions: body.repetitions, mock: true });
    expect(mock.status).toBe(200);
    const job = await stack.http("GET", `/v1/screening/jobs/${mock.body.job_id}`);
    expect(job.body.estimated_cost_usd).toBe(estimate.body.estimated_cost_usd);
  });
});
