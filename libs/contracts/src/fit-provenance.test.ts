import { describe, expect, it } from "vitest";
import { ASKED_MAX_CHARS, fitProvenance, type Provenance } from "./provenance";

const base: Provenance = {
  model_requested: "m",
  model_resolved: "m",
  models_used: [],
  service_version: { version: "1", commit: null },
  provider: { host: null, profile: "mock" },
  parameters: {},
  repetitions: 1,
  threshold: 1,
  decision_rule: "r",
  prompts: [],
};
const askedChars = (p: Provenance) => JSON.stringify({ criteria: p.criteria, questions: p.questions, fields: p.fields }).length;

describe("fitProvenance", () => {
  it("keeps asked texts that fit whole, and untouched", () => {
    const small = { ...base, criteria: [{ name: "a", type: "include" as const, text: "x".repeat(5_000) }], questions: ["q"] };
    expect(fitProvenance(small)).toBe(small);
  });

  it("cuts the largest criteria, questions and field definitions a request may hold to fit the job's record, and says so", () => {
    const criteria = Array.from({ length: 200 }, (_, i) => ({ name: `c${i}`.padEnd(1_000, "n"), type: "include" as const, text: '"\\'.repeat(2_500) }));
    const questions = Array.from({ length: 50 }, () => "\u0001".repeat(2_000));
    const fields = Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, description: "d".repeat(5_000), data_type_primary: "text" as const, data_type_secondary: "NA", examples: Array.from({ length: 100 }, () => "e".repeat(500)) }));
    const fit = fitProvenance({ ...base, criteria, questions, fields });
    expect(askedChars(fit)).toBeLessThanOrEqual(ASKED_MAX_CHARS);
    expect(fit.asked_cut_to_chars).toBeGreaterThan(0);
    expect(fit.criteria).toHaveLength(200);
    expect(fit.fields!.map((f) => f.name)).toEqual(fields.map((f) => f.name));
    expect(fit.criteria![0]!.text.endsWith("…")).toBe(true);
    expect(fit.criteria![0]!.text.length).toBeLessThanOrEqual(fit.asked_cut_to_chars!);
  });
});
