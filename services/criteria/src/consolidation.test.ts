import { describe, expect, it } from "vitest";
import { applyConsolidationRules, criterionIds } from "./consolidation";

const group = (ids: number[], confidence: number, primary = ids[0]!) => ({
  group_type: "semantic" as const,
  category: "Population",
  criterion_ids: ids,
  recommended_primary_id: primary,
  merge_rationale: "same population",
  ai_confidence: confidence,
});
const proposal = (ids: number[], confidence: number, label: string) => ({
  category: "Population",
  criterion_ids: ids,
  proposed_merged_criterion: label,
  proposed_description: "merged",
  proposed_type: "include" as const,
  merge_rationale: "overlap",
  ai_confidence: confidence,
});

describe("applyConsolidationRules", () => {
  const known = new Set([1, 2, 3, 4]);

  it("keeps groups at or above 0.75 confidence and drops those below", () => {
    const out = applyConsolidationRules(
      { duplicate_groups: [group([1, 2], 0.75), group([3, 4], 0.74)], consolidation_proposals: [] },
      known,
    );
    expect(out.duplicate_groups.map((g) => g.criterion_ids)).toEqual([[1, 2]]);
  });

  it("keeps proposals at or above 0.75 and drops those below", () => {
    const out = applyConsolidationRules(
      { duplicate_groups: [], consolidation_proposals: [proposal([1, 2], 0.9, "Adults"), proposal([3, 4], 0.5, "Children")] },
      known,
    );
    expect(out.consolidation_proposals.map((p) => p.proposed_merged_criterion)).toEqual(["Adults"]);
  });

  it("accepts a 10-word label and rejects an 11-word one with a warning", () => {
    const ten = "one two three four five six seven eight nine ten";
    const eleven = `${ten} eleven`;
    const out = applyConsolidationRules(
      { duplicate_groups: [], consolidation_proposals: [proposal([1, 2], 0.9, ten), proposal([3, 4], 0.9, eleven)] },
      known,
    );
    expect(out.consolidation_proposals.map((p) => p.proposed_merged_criterion)).toEqual([ten]);
    expect(out.warnings).toHaveLength(1);
    expect(out.warnings[0]).toContain("3, 4");
  });

  it("ignores ids that are not in the request and drops groups left with fewer than two", () => {
    const out = applyConsolidationRules(
      { duplicate_groups: [group([1, 99, 2], 0.9, 99), group([3, 77], 0.9)], consolidation_proposals: [proposal([4, 55], 0.9, "x")] },
      known,
    );
    expect(out.duplicate_groups).toEqual([expect.objectContaining({ criterion_ids: [1, 2], recommended_primary_id: 1 })]);
    expect(out.consolidation_proposals).toEqual([]);
  });
});

describe("criterionIds", () => {
  it("uses integer ids when present and 1-based positions otherwise", () => {
    expect(criterionIds([{ id: 10 }, { id: "11" }, { text: "no id" }, { id: "abc" }])).toEqual([10, 11, 3, 4]);
  });
});
