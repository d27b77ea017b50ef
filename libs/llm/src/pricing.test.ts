import { afterEach, describe, expect, it, vi } from "vitest";
import { loadModelAliases } from "./models";
import { ServiceError } from "@litrev/contracts";
import { PRICES, costUsd, estimateTokens, loadModelPrices, priceFor, requirePrice } from "./pricing";
import type { LlmUsage } from "@litrev/contracts";
import { ZERO_USAGE, accumulateUsage, addUsage, toContractUsage } from "./usage";

/** The built-in aliases, whatever LLM_MODEL_ALIASES the test machine has. */
const defaults = loadModelAliases({});

describe("priceFor", () => {
  afterEach(() => vi.unstubAllEnvs());
  it("has the field notes' prices (USD per 1M tokens: input / cached / output)", () => {
    const table = Object.fromEntries(Object.entries(PRICES).map(([model, p]) => [model, [p.input, p.cachedInput, p.output]]));
    expect(table).toEqual({
      "gpt-5-nano": [0.05, 0.005, 0.4],
      "gpt-5-mini": [0.25, 0.025, 2.0],
      "gpt-4.1": [2.0, 0.5, 8.0],
      "gpt-4.1-mini": [0.4, 0.1, 1.6],
      "gpt-4o-mini": [0.15, 0.075, 0.6],
    });
  });

  it("resolves aliases, dated snapshots and router prefixes", () => {
    expect(priceFor("llm-5-nano", defaults)).toMatchObject({ model: "gpt-5-nano", known: true });
    expect(priceFor("gpt-5-nano-2025-08-07", defaults)).toMatchObject({ model: "gpt-5-nano", known: true });
    expect(priceFor("gpt-4.1-mini-2025-04-14", defaults)).toMatchObject({ model: "gpt-4.1-mini", known: true });
    expect(priceFor("openai/gpt-4o-mini", defaults)).toMatchObject({ model: "gpt-4o-mini", known: true });
  });

  it("guesses no price for an unknown model: unknown, zero, and a 400 naming MODEL_PRICES where one is needed", () => {
    const unknown = priceFor("my-vllm-model", defaults);
    expect(unknown).toMatchObject({ model: "my-vllm-model", known: false, input: 0, output: 0 });
    expect(costUsd({ model: "my-vllm-model", inputTokens: 1000, outputTokens: 1000 }, defaults)).toBe(0);
    let error: unknown;
    try {
      requirePrice("llm-5-nano", { "llm-5-nano": "my-vllm-model" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).category).toBe("validation");
    expect((error as ServiceError).message).toMatch(/No price is configured for the model 'llm-5-nano' \(provider model 'my-vllm-model'\).*MODEL_PRICES/);
    expect(requirePrice("llm-5-nano", defaults)).toMatchObject({ model: "gpt-5-nano", known: true });
  });

  it("prices a model MODEL_PRICES names with its organisation prefix (a vLLM model path), as the docs show", () => {
    vi.stubEnv("MODEL_PRICES", '{"Qwen/Qwen2.5-7B-Instruct":{"input":0.2,"output":0.8}}');
    expect(priceFor("Qwen/Qwen2.5-7B-Instruct", {})).toMatchObject({ known: true, input: 0.2, output: 0.8 });
    expect(priceFor("llm-5-nano", { "llm-5-nano": "Qwen/Qwen2.5-7B-Instruct" }).known).toBe(true);
    // A router prefix still falls back to the base name's price.
    expect(priceFor("openai/gpt-5-nano", {})).toMatchObject({ known: true, model: "gpt-5-nano" });
  });

  it("takes configured prices from MODEL_PRICES (cached input at the input price unless given) and refuses a malformed value", () => {
    const prices = loadModelPrices({ MODEL_PRICES: '{"My-VLLM-Model":{"input":0.2,"output":0.8},"gpt-5-nano":{"input":1,"output":2,"cachedInput":0.5}}' });
    expect(prices["my-vllm-model"]).toEqual({ input: 0.2, cachedInput: 0.2, output: 0.8 });
    expect(prices["gpt-5-nano"]).toEqual({ input: 1, cachedInput: 0.5, output: 2 });
    expect(prices["gpt-4.1"]).toEqual(PRICES["gpt-4.1"]);
    expect(() => loadModelPrices({ MODEL_PRICES: "{not json" })).toThrow(/MODEL_PRICES is not valid JSON/);
    expect(() => loadModelPrices({ MODEL_PRICES: '{"m":{"input":-1,"output":1}}' })).toThrow(/MODEL_PRICES must map/);
  });

  it("follows alias overrides", () => {
    expect(priceFor("llm-5-nano", { "llm-5-nano": "gpt-4o-mini" }).model).toBe("gpt-4o-mini");
  });
});

describe("costUsd", () => {
  it("charges uncached input, cached input and output at their own prices", () => {
    const price = PRICES["gpt-5-mini"]!;
    const cost = costUsd({ model: "llm-5-mini", inputTokens: 10_000, cachedInputTokens: 4_000, outputTokens: 2_000 }, defaults);
    expect(cost).toBeCloseTo((6_000 * price.input + 4_000 * price.cachedInput + 2_000 * price.output) / 1e6, 12);
  });

  it("is zero for zero tokens and never counts more cached tokens than input", () => {
    expect(costUsd({ model: "gpt-4.1", inputTokens: 0, outputTokens: 0 }, defaults)).toBe(0);
    const allCached = costUsd({ model: "gpt-4.1", inputTokens: 100, cachedInputTokens: 500, outputTokens: 0 }, defaults);
    expect(allCached).toBeCloseTo((100 * PRICES["gpt-4.1"]!.cachedInput) / 1e6, 12);
  });

  it("estimates about four characters per token", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abcd")).toBe(1);
    expect(estimateTokens("abcde")).toBe(2);
  });
});

describe("usage accounting", () => {
  const call = (input: number, cached: number, output: number, cost: number, model = "m-1"): LlmUsage => ({
    calls: 1,
    input_tokens: input,
    cached_input_tokens: cached,
    output_tokens: output,
    cost_usd: cost,
    retries: 0,
    models: { [model]: 1 },
  });

  it("sums usages field by field, replies per model in first-seen order", () => {
    const total = accumulateUsage([call(100, 0, 10, 0.001, "m-2"), { ...call(200, 128, 20, 0.002), retries: 2 }, call(1, 0, 1, 0, "m-2")]);
    expect(total).toEqual({ calls: 3, input_tokens: 301, cached_input_tokens: 128, output_tokens: 31, cost_usd: expect.closeTo(0.003, 12), retries: 2, models: { "m-2": 2, "m-1": 1 } });
    expect(Object.keys(total.models ?? {})).toEqual(["m-2", "m-1"]);
    expect(accumulateUsage([])).toEqual(ZERO_USAGE);
    expect(addUsage(ZERO_USAGE, call(1, 0, 2, 0.5))).toEqual(call(1, 0, 2, 0.5));
    // A checkpoint written before retries and models were counted adds as none.
    const { retries: _r, models: _m, ...earlier } = call(1, 0, 2, 0.5);
    expect(addUsage(ZERO_USAGE, earlier)).toEqual({ ...earlier, retries: 0, models: {} });
  });

  it("converts to the contracts' Usage shape", () => {
    expect(toContractUsage(call(1000, 256, 50, 0.000123456789))).toEqual({
      input_tokens: 1000,
      output_tokens: 50,
      total_tokens: 1050,
      cached_input_tokens: 256,
      estimated_cost_usd: 0.000123,
    });
  });
});
