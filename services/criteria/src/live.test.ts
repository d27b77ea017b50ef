import { describe, expect, it } from "vitest";
import { dedupe, normaliseCriterion } from "./live";

describe("criteria deduplication", () => {
  it("treats case, spacing and punctuation variants as the same criterion", () => {
    expect(normaliseCriterion("  Adults (18+ years)! ")).toBe(normaliseCriterion("adults 18 years"));
  });

  it("drops drafts that repeat existing criteria or each other", () => {
    const drafts = [{ text: "Adults aged 18 or over" }, { text: "Randomised trials" }, { text: "randomised  trials." }, { text: "Hospital setting" }];
    expect(dedupe(drafts, ["ADULTS aged 18 or over"]).map((d) => d.text)).toEqual(["Randomised trials", "Hospital setting"]);
  });
});
