import { describe, expect, it } from "vitest";
import { GroupTagsRequest, GroupTagsResponse, RefineFieldsRequest, RefineFieldsResponse, SuggestFieldsRequest, type IndexerField } from "@litrev/contracts";
import { assignGroups, distinctValues, UNGROUPED } from "./group-tags";
import { mockGroupTags, mockRefineFields, mockSuggestFields } from "./mock";
import { acceptRefinements } from "./refine-fields";
import { acceptSuggestions } from "./suggest-fields";

const proposal = (name: string, over: object = {}) => ({
  name,
  description: `about ${name}`,
  data_type_primary: "text" as const,
  data_type_secondary: "",
  examples: [] as string[],
  examples_mode: "enum" as const,
  depth: "minimal" as const,
  ...over,
});

describe("suggest-fields", () => {
  it("skips existing fields (compared loosely), repeats and reserved names; keeps warnings of proposed fields", () => {
    const out = acceptSuggestions(
      {
        fields: [proposal("Sample size"), proposal("setting"), proposal("Setting"), proposal("ID"), proposal("design", { examples: ["RCT", "cohort"] })],
        warnings: [
          { field: "setting", risk_level: "high", reason: "often missing", suggested_fallback: "full text" },
          { field: "sample_size", risk_level: "low", reason: "existing", suggested_fallback: "-" },
        ],
      },
      ["sample_size"],
    );
    expect(out.fields.map((f) => f.name)).toEqual(["setting", "design"]);
    expect(out.fields[0]).toMatchObject({ data_type_secondary: "NA", examples_mode: "guide" });
    expect(out.fields[1]).toMatchObject({ examples: ["RCT", "cohort"], examples_mode: "enum" });
    expect(out.warnings).toEqual([{ field: "setting", risk_level: "high", reason: "often missing", suggested_fallback: "full text" }]);
  });

  it("mock mode is deterministic, says it is a placeholder and skips existing fields", () => {
    const request = SuggestFieldsRequest.parse({ mock: true, existing_fields: ["Sample Size", "country"] });
    const a = mockSuggestFields(request);
    expect(a).toEqual(mockSuggestFields(request));
    expect(a.fields.map((f) => f.name)).not.toContain("sample_size");
    expect(a.fields.map((f) => f.name)).not.toContain("country");
    expect(a.fields.every((f) => /placeholder/i.test(f.description))).toBe(true);
  });
});

describe("refine-fields", () => {
  const inputs: IndexerField[] = [
    { name: "Sample size", description: "n", data_type_primary: "number", data_type_secondary: "NA" },
    { name: "participants", description: "n", data_type_primary: "number", data_type_secondary: "NA" },
  ];
  const suggestion = (action: "add" | "modify" | "remove" | "merge", original: string | null, target: string | null, name = "x") => ({
    action,
    field: proposal(name),
    rationale: "r",
    original_field_name: original,
    target_field_name: target,
  });

  it("keeps only suggestions that refer to real input fields, spelled as in the input", () => {
    const out = acceptRefinements(
      {
        suggestions: [
          suggestion("modify", "sample_size", null, "Sample size"),
          suggestion("remove", "no such field", null),
          suggestion("merge", "participants", "Sample Size", "Sample size"),
          suggestion("merge", "participants", "participants"),
          suggestion("add", null, null, "setting"),
          suggestion("add", null, null, "PARTICIPANTS"),
        ],
      },
      inputs,
    );
    expect(out.suggestions.map((s) => [s.action, s.original_field_name, s.target_field_name, s.field.name])).toEqual([
      ["modify", "Sample size", undefined, "Sample size"],
      ["merge", "participants", "Sample size", "Sample size"],
      ["add", undefined, undefined, "setting"],
    ]);
  });
});

describe("group-tags", () => {
  const values = distinctValues(["RCT", "cohort", "RCT", "survey", "case series", "interviews"]);

  it("puts every distinct value in exactly one group; leftovers go to Other", () => {
    const groups = assignGroups(
      {
        groups: [
          { name: "Experimental", rationale: "r", value_ids: [1, 1, 99] },
          { name: "Observational", rationale: "r", value_ids: [2, 1, 4] },
          { name: "Empty", rationale: "r", value_ids: [] },
        ],
      },
      values,
    );
    expect(groups.map((g) => [g.name, g.values])).toEqual([
      ["Experimental", ["RCT"]],
      ["Observational", ["cohort", "case series"]],
      [UNGROUPED, ["survey", "interviews"]],
    ]);
    const all = groups.flatMap((g) => g.values);
    expect(all.sort()).toEqual([...values].sort());
  });

  it("merges leftovers into the model's own Other group", () => {
    const groups = assignGroups({ groups: [{ name: "other", rationale: "r", value_ids: [5] }] }, values);
    expect(groups).toHaveLength(1);
    expect(groups[0]!.values).toHaveLength(values.length);
  });
});

describe("mock refine-fields and group-tags", () => {
  const fields: IndexerField[] = [
    { name: "study_design", description: "Design", data_type_primary: "text", data_type_secondary: "NA" },
    { name: "n", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
  ];

  it("refine-fields: deterministic, schema-valid, marked as placeholders, never re-adding a defined field", () => {
    const request = RefineFieldsRequest.parse({ fields, mock: true });
    const answer = mockRefineFields(request);
    expect(answer).toEqual(mockRefineFields(request));
    expect(RefineFieldsResponse.parse(answer)).toEqual(answer);
    expect(answer.suggestions.map((s) => [s.action, s.field.name])).toEqual([["modify", "study_design"], ["add", "population"]]);
    for (const s of answer.suggestions) expect(s.rationale).toMatch(/Placeholder from mock mode/);
  });

  it("group-tags: every distinct value in exactly one placeholder group, as many groups as hinted", () => {
    const values = ["RCT", "cohort", "RCT", "case-control", "cross-sectional", "survey", "qualitative"];
    const answer = mockGroupTags(GroupTagsRequest.parse({ field_name: "design", values, num_groups_hint: 2, mock: true }));
    expect(GroupTagsResponse.parse(answer)).toEqual(answer);
    expect(answer.groups).toHaveLength(2);
    expect(answer.groups.flatMap((g) => g.values).sort()).toEqual([...new Set(values)].sort());
    expect(answer.usage).toEqual({ total_tokens: 0, estimated_cost_usd: 0 });
    expect(answer.groups.every((g) => /Placeholder/.test(`${g.name} ${g.rationale}`))).toBe(true);
    // More groups hinted than values: one group per value, none empty.
    expect(mockGroupTags(GroupTagsRequest.parse({ field_name: "design", values: ["a", "b"], num_groups_hint: 5 })).groups).toHaveLength(2);
  });
});
