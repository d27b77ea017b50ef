import { describe, expect, it } from "vitest";
import { defaultServiceConfig, ESTIMATE_DISCLAIMER, IndexerEstimateRequest, type IndexerField } from "@litrev/contracts";
import { estimateTokens, PRICES } from "@litrev/llm";
import { ESTIMATE, estimateIndexer, fixedPromptTokens, outputTokensPerRecord } from "./estimate";
import { extractionPlan } from "./pipeline/plan";
import { extractionUserMessage } from "./pipeline/prompt";
import { loadNagtegaal } from "../../../test/support/dataset";

const config = defaultServiceConfig("extraction");
const field = (name: string, over: Partial<IndexerField> = {}): IndexerField => ({
  name,
  description: `What the record says about ${name}`,
  data_type_primary: "text",
  data_type_secondary: "NA",
  ...over,
});
const five = [
  field("study_design"),
  field("sample_size", { data_type_primary: "number", data_type_secondary: "count" }),
  field("setting"),
  field("significant_effect", { data_type_primary: "yes_no" }),
  field("outcomes", { data_type_primary: "list_text" }),
];
const request = (over: object) => IndexerEstimateRequest.parse({ fields: five, record_count: 100, ...over });

describe("indexer estimate formula", () => {
  it("is R × (P + A) input and R × (B + Σ O(f) + Z) output", () => {
    const out = estimateIndexer(request({ record_count: 100, model: "llm-5-mini" }), config);
    const P = fixedPromptTokens(five, "llm-5-mini", config);
    expect(out.estimated_input_tokens).toBe(100 * (P + ESTIMATE.recordTokens));
    // 5 minimal fields, one of them a list, on a reasoning model.
    expect(out.estimated_output_tokens).toBe(100 * (10 + 5 * 60 + 20 + 200));
    expect(out).toMatchObject({ confidence: "approximate", disclaimer: ESTIMATE_DISCLAIMER });
  });

  it("follows the alias table it is given: a remapped alias is priced, and its reasoning tokens counted, as its new target", () => {
    const remapped = estimateIndexer(request({ record_count: 100, model: "llm-5-mini" }), config, { "llm-5-mini": "gpt-4.1" });
    const price = PRICES["gpt-4.1"]!;
    // gpt-4.1 is no reasoning model: no Z tokens per record.
    expect(remapped.estimated_output_tokens).toBe(100 * (10 + 5 * 60 + 20));
    const expected = (remapped.estimated_input_tokens * price.input + remapped.estimated_output_tokens * price.output) / 1e6;
    expect(remapped.estimated_cost_usd).toBeCloseTo(expected, 6);
  });

  it("prices the totals with the model's price per million tokens, rounded to 6 decimals", () => {
    const out = estimateIndexer(request({ record_count: 1000, model: "llm-5-mini" }), config);
    const price = PRICES["gpt-5-mini"]!;
    const expected = (out.estimated_input_tokens * price.input + out.estimated_output_tokens * price.output) / 1e6;
    expect(out.estimated_cost_usd).toBeCloseTo(expected, 6);
    const large = estimateIndexer(request({ record_count: 1000, model: "llm-4.1" }), config);
    expect(large.estimated_cost_usd).toBeGreaterThan(out.estimated_cost_usd);
  });

  it("grows linearly in records and with every field; depth full and lists cost more output", () => {
    expect(estimateIndexer(request({ record_count: 0 }), config)).toMatchObject({ estimated_input_tokens: 0, estimated_output_tokens: 0, estimated_cost_usd: 0 });
    const one = estimateIndexer(request({ record_count: 1 }), config);
    const many = estimateIndexer(request({ record_count: 7 }), config);
    expect(many.estimated_input_tokens).toBe(7 * one.estimated_input_tokens);
    expect(fixedPromptTokens([...five, field("country")], "llm-5-mini", config)).toBeGreaterThan(fixedPromptTokens(five, "llm-5-mini", config));
    expect(outputTokensPerRecord([field("a", { depth: "full" })], "llm-4.1")).toBe(10 + 110);
    expect(outputTokensPerRecord([field("a", { data_type_primary: "list_number" })], "llm-4.1")).toBe(10 + 60 + 20);
    expect(outputTokensPerRecord([field("a")], "llm-5-nano")).toBe(10 + 60 + 200);
  });

  it("matches the prompt text actually built for real records within 15% on input", () => {
    const rows = loadNagtegaal().filter((r) => r.abstract.trim()).slice(0, 400);
    const plan = extractionPlan({ fields: five, model: "llm-5-mini" }, config);
    let measured = 0;
    for (const row of rows) {
      measured += estimateTokens(plan.system) + estimateTokens(extractionUserMessage(plan.prefix, { title: row.title, abstract: row.abstract }));
    }
    const estimated = estimateIndexer(request({ record_count: rows.length }), config).estimated_input_tokens;
    expect(Math.abs(estimated - measured) / measured).toBeLessThan(0.15);
  });
});
