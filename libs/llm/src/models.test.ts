import { describe, expect, it } from "vitest";
import { MODEL } from "@litrev/contracts";
import { isReasoningModel, loadModelAliases, modelRequestParams, resolveModel } from "./models";

describe("model aliases", () => {
  it("maps the spec's aliases and passes any other name through", () => {
    const aliases = loadModelAliases({});
    expect(resolveModel(MODEL.nano, aliases)).toBe("gpt-5-nano");
    expect(resolveModel(MODEL.mini, aliases)).toBe("gpt-5-mini");
    expect(resolveModel(MODEL.large, aliases)).toBe("gpt-4.1");
    expect(resolveModel("qwen2.5:7b", aliases)).toBe("qwen2.5:7b");
    expect(resolveModel("toString", aliases)).toBe("toString");
  });

  it("takes overrides from LLM_MODEL_ALIASES and keeps the other defaults", () => {
    const aliases = loadModelAliases({ LLM_MODEL_ALIASES: '{"llm-5-nano":"my-vllm-model","fast":"gpt-4o-mini"}' });
    expect(resolveModel("llm-5-nano", aliases)).toBe("my-vllm-model");
    expect(resolveModel("fast", aliases)).toBe("gpt-4o-mini");
    expect(resolveModel("llm-4.1", aliases)).toBe("gpt-4.1");
  });

  it("refuses a malformed override instead of silently ignoring it", () => {
    expect(() => loadModelAliases({ LLM_MODEL_ALIASES: "{nope" })).toThrow(/not valid JSON/);
    expect(() => loadModelAliases({ LLM_MODEL_ALIASES: '{"llm-5-nano": 5}' })).toThrow(/JSON object/);
    expect(() => loadModelAliases({ LLM_MODEL_ALIASES: '["a"]' })).toThrow(/JSON object/);
  });
});

describe("model-family quirks", () => {
  it.each(["gpt-5-nano", "gpt-5-mini-2025-08-07", "gpt-5", "o3-mini", "o4-mini", "openai/gpt-5-nano"])("%s is a reasoning model", (model) => {
    expect(isReasoningModel(model)).toBe(true);
  });

  it.each(["gpt-4.1", "gpt-4o-mini", "llama3", "omni-model"])("%s is not", (model) => {
    expect(isReasoningModel(model)).toBe(false);
  });

  it("never sends temperature or max_tokens to reasoning models", () => {
    expect(modelRequestParams("gpt-5-nano", { temperature: 0.2, maxOutputTokens: 300, reasoningEffort: "minimal" })).toEqual({
      max_completion_tokens: 300,
      reasoning_effort: "minimal",
    });
  });

  it("sends temperature and max_tokens, and no reasoning effort, to other models", () => {
    expect(modelRequestParams("gpt-4.1", { temperature: 0.2, maxOutputTokens: 300, reasoningEffort: "minimal" })).toEqual({
      temperature: 0.2,
      max_tokens: 300,
    });
    expect(modelRequestParams("gpt-4.1", {})).toEqual({});
  });
});
