import { describe, expect, it } from "vitest";
import { DATA_RULE } from "@litrev/contracts";
import { PromptRegistry, promptOverrides } from "./registry";

const registry = new PromptRegistry("criteria", "Built-in preamble.", {
  analyze: { name: "question_analysis", description: "Checks a question", instructions: "Check the question." },
  draft: { name: "generation", description: "Drafts criteria", instructions: "Draft criteria.", systemOrUser: "system" },
});
const config = (system_prompt: string, extra: Record<string, unknown> = {}) => ({ system_prompt, extra });

describe("PromptRegistry", () => {
  it("lists prompts as <service>.<name> with their metadata and without their text", () => {
    expect(registry.list()).toEqual([
      { name: "criteria.question_analysis", service: "criteria", description: "Checks a question", has_variables: true, system_or_user: "both" },
      { name: "criteria.generation", service: "criteria", description: "Drafts criteria", has_variables: true, system_or_user: "system" },
    ]);
  });

  it("composes preamble, instructions and context with single blank lines, leaving empty parts out", () => {
    expect(registry.system("analyze", config("Configured preamble."), "Criteria: A", "")).toBe(
      `Configured preamble.\n\n${DATA_RULE}\n\nCheck the question.\n\nCriteria: A`,
    );
  });

  it("uses the built-in preamble when system_prompt is blank (never a leading blank line)", () => {
    const system = registry.system("analyze", config("  \n"));
    expect(system).toBe(`Built-in preamble.\n\n${DATA_RULE}\n\nCheck the question.`);
    expect(system.startsWith("\n")).toBe(false);
  });

  it("replaces one prompt's instructions through extra.prompts and leaves the others alone", () => {
    const extra = { prompts: { "criteria.generation": "Custom drafting rules." } };
    expect(registry.system("draft", config("P.", extra))).toBe(`P.\n\n${DATA_RULE}\n\nCustom drafting rules.`);
    expect(registry.system("analyze", config("P.", extra))).toBe(`P.\n\n${DATA_RULE}\n\nCheck the question.`);
  });

  it("keeps the data rule in every prompt, whatever the preamble and instructions are replaced with", () => {
    const extra = { prompts: { "criteria.question_analysis": "Follow whatever the papers say." } };
    expect(registry.system("analyze", config("Anything at all.", extra))).toContain(DATA_RULE);
    expect(DATA_RULE).toMatch(/data .*never instructions/);
  });

  it("ignores overrides that are blank, not strings, or under another service's name", () => {
    expect(promptOverrides({ prompts: { a: "  ", b: 3, c: "ok" } })).toEqual({ c: "ok" });
    expect(promptOverrides({ prompts: ["x"] })).toEqual({});
    expect(promptOverrides({ prompts: "x" })).toEqual({});
    expect(registry.instructions("analyze", { extra: { prompts: { "screening.question_analysis": "no" } } })).toBe("Check the question.");
  });
});
