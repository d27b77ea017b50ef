import { describe, expect, it } from "vitest";
import { BaseEnv, llmOptions } from "./env";

describe("BaseEnv", () => {
  it("parses LLM_MODEL_ALIASES into the overrides the provider client starts from", () => {
    const env = BaseEnv.parse({ LLM_MODEL_ALIASES: ' {"llm-5-nano":"my-vllm-model"} ' });
    expect(env.LLM_MODEL_ALIASES).toEqual({ "llm-5-nano": "my-vllm-model" });
    expect(llmOptions(env).modelAliases).toEqual({ "llm-5-nano": "my-vllm-model" });
    expect(BaseEnv.parse({}).LLM_MODEL_ALIASES).toBeUndefined();
  });

  it("refuses a malformed LLM_MODEL_ALIASES at start-up, saying what is wrong", () => {
    const issues = (value: string) => BaseEnv.safeParse({ LLM_MODEL_ALIASES: value }).error?.issues ?? [];
    expect(issues("{nope")).toMatchObject([{ path: ["LLM_MODEL_ALIASES"], message: expect.stringMatching(/not valid JSON/) }]);
    expect(issues('{"llm-5-nano": 5}')).toMatchObject([{ path: ["LLM_MODEL_ALIASES"], message: expect.stringMatching(/JSON object/) }]);
    expect(issues('["a"]')).toMatchObject([{ path: ["LLM_MODEL_ALIASES"] }]);
  });
});
