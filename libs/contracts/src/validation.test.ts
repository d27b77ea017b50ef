import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AnalyzeQuestionRequest, GenerateCriteriaRequest } from "./criteria";
import { ActiveJobQuery, ListJobsQuery } from "./common";
import { ServiceConfigPatch } from "./config";
import { parseOrIssues, zodIssuesToValidation } from "./validation";
import { CreateScreeningJobRequest } from "./screening";
import { GroupTagsRequest } from "./indexer";

/** The issues of a parse that must fail. */
function issues(schema: z.ZodType, data: unknown, root = "body") {
  const result = parseOrIssues(schema, data, root);
  if (result.success) throw new Error(`expected a validation failure for ${JSON.stringify(data)}`);
  return result.issues;
}

describe("parseOrIssues", () => {
  it("returns the parsed data with defaults filled in", () => {
    const result = parseOrIssues(AnalyzeQuestionRequest, { research_question: "Does X help Y?" }, "body");
    expect(result).toEqual({
      success: true,
      data: { research_question: "Does X help Y?", model: "llm-5-mini", mock: false },
    });
  });

  it("reports a missing body as the body field being required", () => {
    expect(issues(AnalyzeQuestionRequest, undefined)).toEqual([{ type: "missing", loc: ["body"], msg: "Field required" }]);
  });

  it("reports a missing field with FastAPI's type and message", () => {
    expect(issues(AnalyzeQuestionRequest, {})).toEqual([
      { type: "missing", loc: ["body", "research_question"], msg: "Field required" },
    ]);
  });

  it("reports a wrong type per primitive", () => {
    expect(issues(AnalyzeQuestionRequest, { research_question: 5 })).toEqual([
      { type: "string_type", loc: ["body", "research_question"], msg: "Input should be a valid string" },
    ]);
    expect(issues(AnalyzeQuestionRequest, { research_question: "q", mock: "yes" })).toEqual([
      { type: "bool_type", loc: ["body", "mock"], msg: "Input should be a valid boolean" },
    ]);
    expect(issues(GenerateCriteriaRequest, { project_description: "p", research_questions: "one" })).toEqual([
      { type: "list_type", loc: ["body", "research_questions"], msg: "Input should be a valid list" },
    ]);
    expect(issues(AnalyzeQuestionRequest, [1])[0]).toMatchObject({ type: "model_type", loc: ["body"] });
  });

  it("reports a value outside an enum with the accepted values", () => {
    expect(issues(GenerateCriteriaRequest, { project_description: "p", criterion_type: "maybe" })).toEqual([
      { type: "enum", loc: ["body", "criterion_type"], msg: "Input should be 'include' or 'exclude'" },
    ]);
    expect(issues(z.object({ v: z.literal("x") }), { v: "y" })).toEqual([
      { type: "literal_error", loc: ["body", "v"], msg: "Input should be 'x'" },
    ]);
  });

  it("reports bounds on strings, lists and numbers", () => {
    expect(issues(AnalyzeQuestionRequest, { research_question: "" })).toEqual([
      { type: "string_too_short", loc: ["body", "research_question"], msg: "String should have at least 1 character" },
    ]);
    expect(issues(ServiceConfigPatch, { max_output_tokens: -1 })).toEqual([
      { type: "greater_than_equal", loc: ["body", "max_output_tokens"], msg: "Input should be greater than or equal to 1" },
    ]);
    expect(issues(ServiceConfigPatch, { temperature: 3 })).toEqual([
      { type: "less_than_equal", loc: ["body", "temperature"], msg: "Input should be less than or equal to 2" },
    ]);
    expect(issues(z.object({ xs: z.array(z.string()).min(2) }), { xs: ["a"] })).toEqual([
      { type: "too_short", loc: ["body", "xs"], msg: "List should have at least 2 items" },
    ]);
    expect(issues(z.object({ n: z.number().int() }), { n: 1.5 })).toEqual([
      { type: "int_from_float", loc: ["body", "n"], msg: "Input should be a valid integer, got a number with a fractional part" },
    ]);
  });

  it("reports every problem at once, with list indices in loc", () => {
    const found = issues(GenerateCriteriaRequest, { research_questions: ["ok", 7], criterion_type: "maybe" });
    expect(found).toHaveLength(3);
    expect(found).toContainEqual({ type: "missing", loc: ["body", "project_description"], msg: "Field required" });
    expect(found).toContainEqual({ type: "string_type", loc: ["body", "research_questions", 1], msg: "Input should be a valid string" });
    expect(found.map((i) => i.type)).toContain("enum");
  });

  it("names unknown keys of a strict object one by one", () => {
    expect(issues(z.strictObject({ a: z.string() }), { a: "x", b: 1, c: 2 })).toEqual([
      { type: "extra_forbidden", loc: ["body", "b"], msg: "Extra inputs are not permitted" },
      { type: "extra_forbidden", loc: ["body", "c"], msg: "Extra inputs are not permitted" },
    ]);
  });

  it("tells a missing coerced query value from an unparsable one", () => {
    expect(issues(ActiveJobQuery, {}, "query")).toEqual([
      { type: "missing", loc: ["query", "project_id"], msg: "Field required" },
    ]);
    expect(issues(ListJobsQuery, { limit: "abc" }, "query")).toEqual([
      { type: "float_parsing", loc: ["query", "limit"], msg: "Input should be a valid number, unable to parse string as a number" },
    ]);
    expect(parseOrIssues(ListJobsQuery, { limit: "7" }, "query")).toEqual({ success: true, data: { limit: 7 } });
    expect(parseOrIssues(ListJobsQuery, {}, "query")).toEqual({ success: true, data: { limit: 50 } });
  });

  it("falls back to the issue's own input when the original data is not given", () => {
    const result = z.object({ a: z.string() }).safeParse({}, { reportInput: true });
    expect(result.success).toBe(false);
    expect(zodIssuesToValidation(result.error!.issues, "body")).toEqual([
      { type: "missing", loc: ["body", "a"], msg: "Field required" },
    ]);
  });

  it("renders a refinement as a value error", () => {
    const schema = z.object({ a: z.string().refine((v) => v === "ok", "must be ok") });
    expect(issues(schema, { a: "no" })).toEqual([{ type: "value_error", loc: ["body", "a"], msg: "Value error, must be ok" }]);
  });
});

describe("lax inputs, as the original system accepted them", () => {
  const papers = [{ id: "p1", title: "t", abstract: "a" }];

  it("takes an import's PRISMA counts (identification), never more duplicates removed than records identified", () => {
    const papers = [{ id: "p1", title: "A", abstract: "B" }];
    expect(parseOrIssues(CreateScreeningJobRequest, { papers, identification: { records_identified: 520, duplicates_removed: 85 } }, "body")).toMatchObject({ success: true, data: { identification: { records_identified: 520, duplicates_removed: 85 } } });
    const refused = parseOrIssues(CreateScreeningJobRequest, { papers, identification: { records_identified: 5, duplicates_removed: 6 } }, "body");
    expect(refused).toMatchObject({ success: false });
  });

  it("coerces numeric strings for numbers and true/false, 1/0 for booleans, at any depth", () => {
    const parsed = parseOrIssues(CreateScreeningJobRequest, { papers, repetitions: "3", threshold: "2", project_id: "42", mock: "true", max_estimated_cost_usd: " 1e-2 " }, "body");
    expect(parsed).toMatchObject({ success: true, data: { repetitions: 3, threshold: 2, project_id: 42, mock: true, max_estimated_cost_usd: 0.01 } });
    for (const [given, mock] of [["false", false], ["FALSE", false], [0, false], ["0", false], [1, true], ["1", true]] as const) {
      expect(parseOrIssues(CreateScreeningJobRequest, { papers, mock: given }, "body"), String(given)).toMatchObject({ success: true, data: { mock } });
    }
    expect(parseOrIssues(GroupTagsRequest, { field_name: "f", values: ["a"], num_groups_hint: "2", mock: "1" }, "body")).toMatchObject({
      success: true,
      data: { num_groups_hint: 2, mock: true },
    });
  });

  it("still refuses anything else with the spec's body naming the field, after the usual checks", () => {
    expect(issues(CreateScreeningJobRequest, { papers, repetitions: "three", mock: "yes" })).toEqual([
      { type: "float_parsing", loc: ["body", "repetitions"], msg: "Input should be a valid number, unable to parse string as a number" },
      { type: "bool_type", loc: ["body", "mock"], msg: "Input should be a valid boolean" },
    ]);
    // Coerced, then held to the field's own bounds and type.
    expect(issues(CreateScreeningJobRequest, { papers, repetitions: "0" })).toContainEqual({
      type: "greater_than_equal",
      loc: ["body", "repetitions"],
      msg: "Input should be greater than or equal to 1",
    });
    expect(issues(CreateScreeningJobRequest, { papers, repetitions: "2.5" })[0]).toMatchObject({ loc: ["body", "repetitions"] });
    for (const bad of ["", " ", "Infinity", "NaN", "0x10", "1,5"]) expect(issues(CreateScreeningJobRequest, { papers, threshold: bad }), bad).toHaveLength(1);
    // Strings stay strings: a string field never receives a number.
    expect(issues(AnalyzeQuestionRequest, { research_question: 5 })[0]).toMatchObject({ type: "string_type" });
  });
});
