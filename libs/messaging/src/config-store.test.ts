import { describe, expect, it } from "vitest";
import { applyConfigPatch, defaultServiceConfig } from "@litrev/contracts";
import { mergePatches } from "./config-store";

describe("stored configuration overrides", () => {
  it("replaces with a value, drops with null (key by key in extra), and never stores a null", () => {
    const stored = { temperature: 0.3, model: "llm-4.1", extra: { note: "x", prompts: { a: "b" } } };
    expect(mergePatches(stored, { temperature: null })).toEqual({ model: "llm-4.1", extra: { note: "x", prompts: { a: "b" } } });
    expect(mergePatches(stored, { extra: { note: null, keep: 1 } })).toEqual({ temperature: 0.3, model: "llm-4.1", extra: { prompts: { a: "b" }, keep: 1 } });
    expect(mergePatches(stored, { extra: null })).toEqual({ temperature: 0.3, model: "llm-4.1" });
    expect(mergePatches(stored, { extra: { note: null, prompts: null } })).toEqual({ temperature: 0.3, model: "llm-4.1" });
    expect(mergePatches({}, { model: null, max_output_tokens: 10 })).toEqual({ max_output_tokens: 10 });
    // Fields the patch leaves out are kept.
    expect(mergePatches(stored, {})).toEqual(stored);
  });

  it("shows the default again once an override is dropped", () => {
    const defaults = { ...defaultServiceConfig("criteria"), temperature: 0.2, extra: { base: true } };
    const changed = mergePatches({}, { temperature: 0.9, extra: { base: false } });
    expect(applyConfigPatch(defaults, changed)).toMatchObject({ temperature: 0.9, extra: { base: false } });
    const undone = mergePatches(changed, { temperature: null, extra: { base: null } });
    expect(applyConfigPatch(defaults, undone)).toEqual(defaults);
  });
});
