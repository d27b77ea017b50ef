import { describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { CONFIDENCE, coerceValue, parseNumber } from "./coerce";
import { fieldSpecs, qualifierOf } from "./field-spec";

const field = (over: Partial<IndexerField>): IndexerField => ({
  name: "f",
  description: "d",
  data_type_primary: "text",
  data_type_secondary: "NA",
  ...over,
});
const spec = (over: Partial<IndexerField>) => fieldSpecs([field(over)])[0]!;

describe("coerceValue: values typed by data_type_primary", () => {
  it("keeps well-typed values as they are", () => {
    expect(coerceValue(spec({ data_type_primary: "text" }), " RCT ")).toEqual({ value: "RCT", flags: [], factor: 1 });
    expect(coerceValue(spec({ data_type_primary: "number" }), 140)).toEqual({ value: 140, flags: [], factor: 1 });
    expect(coerceValue(spec({ data_type_primary: "yes_no" }), false)).toEqual({ value: false, flags: [], factor: 1 });
    expect(coerceValue(spec({ data_type_primary: "list_text" }), ["a", "b"])).toEqual({ value: ["a", "b"], flags: [], factor: 1 });
    expect(coerceValue(spec({ data_type_primary: "list_number" }), [1, 2.5])).toEqual({ value: [1, 2.5], flags: [], factor: 1 });
  });

  it("reads null, undefined, empty strings and empty lists as not stated", () => {
    for (const type of ["text", "number", "yes_no", "list_text", "list_number"] as const) {
      for (const raw of [null, undefined, "", "  ", []]) {
        const out = coerceValue(spec({ data_type_primary: type }), raw);
        expect(out.value, `${type} ${JSON.stringify(raw)}`).toBeNull();
      }
    }
  });

  it("converts values of the wrong JSON type when the conversion is unambiguous, and flags them", () => {
    expect(coerceValue(spec({ data_type_primary: "number" }), "n = 1,075")).toEqual({ value: 1075, flags: ["coerced"], factor: CONFIDENCE.coerced });
    expect(coerceValue(spec({ data_type_primary: "number" }), "61%").value).toBe(61);
    expect(coerceValue(spec({ data_type_primary: "number" }), "−2.5").value).toBe(-2.5);
    expect(coerceValue(spec({ data_type_primary: "yes_no" }), "Yes").value).toBe(true);
    expect(coerceValue(spec({ data_type_primary: "yes_no" }), 0).value).toBe(false);
    expect(coerceValue(spec({ data_type_primary: "text" }), 12).value).toBe("12");
    expect(coerceValue(spec({ data_type_primary: "list_text" }), "a; b").value).toEqual(["a", "b"]);
    expect(coerceValue(spec({ data_type_primary: "list_number" }), ["3", 4, "x"]).value).toEqual([3, 4]);
  });

  it("rejects what cannot be converted: null, flagged, confidence halved", () => {
    const ambiguous = coerceValue(spec({ data_type_primary: "number" }), "between 10 and 20");
    expect(ambiguous).toEqual({ value: null, flags: ["invalid_value"], factor: CONFIDENCE.rejected });
    expect(coerceValue(spec({ data_type_primary: "number" }), true).flags).toEqual(["invalid_value"]);
    expect(coerceValue(spec({ data_type_primary: "yes_no" }), "maybe").value).toBeNull();
    expect(coerceValue(spec({ data_type_primary: "text" }), { a: 1 }).value).toBeNull();
  });

  it("removes duplicate list items (text compared loosely)", () => {
    expect(coerceValue(spec({ data_type_primary: "list_text" }), ["Nurses", "nurses ", "GPs"]).value).toEqual(["Nurses", "GPs"]);
    expect(coerceValue(spec({ data_type_primary: "list_number" }), [1, 1, 2]).value).toEqual([1, 2]);
  });
});

describe("data_type_secondary qualifiers", () => {
  it("recognises the documented qualifiers and their synonyms on number types only", () => {
    expect(qualifierOf(field({ data_type_primary: "number", data_type_secondary: "Integer" }))).toBe("integer");
    expect(qualifierOf(field({ data_type_primary: "list_number", data_type_secondary: "percent" }))).toBe("percentage");
    expect(qualifierOf(field({ data_type_primary: "number", data_type_secondary: "NA" }))).toBe("none");
    expect(qualifierOf(field({ data_type_primary: "text", data_type_secondary: "year" }))).toBe("none");
  });

  it("rounds integers, and rejects values outside a qualifier's range", () => {
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "integer" }), 12.4)).toEqual({ value: 12, flags: ["coerced"], factor: CONFIDENCE.coerced });
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "count" }), -3).flags).toEqual(["out_of_range"]);
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "percentage" }), 140).value).toBeNull();
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "percentage" }), 61).value).toBe(61);
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "proportion" }), 0.61).value).toBe(0.61);
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "proportion" }), 61).value).toBeNull();
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "year" }), 2006).value).toBe(2006);
    expect(coerceValue(spec({ data_type_primary: "number", data_type_secondary: "year" }), 206).value).toBeNull();
    expect(coerceValue(spec({ data_type_primary: "list_number", data_type_secondary: "year" }), [2006, 3000]).value).toEqual([2006]);
  });
});

describe("examples_mode enum", () => {
  const designs = { data_type_primary: "text" as const, examples: ["RCT", "Cohort study", "Case–control"], examples_mode: "enum" as const };

  it("accepts an allowed value, returned with the example's own spelling", () => {
    expect(coerceValue(spec(designs), "cohort  STUDY")).toEqual({ value: "Cohort study", flags: [], factor: 1 });
    expect(coerceValue(spec(designs), "case-control").value).toBe("Case–control");
  });

  it("turns any other value into null with lowered confidence", () => {
    expect(coerceValue(spec(designs), "Cross-sectional survey")).toEqual({ value: null, flags: ["not_in_enum"], factor: CONFIDENCE.rejected });
  });

  it("filters list items and compares numbers as numbers", () => {
    const list = spec({ ...designs, data_type_primary: "list_text" });
    expect(coerceValue(list, ["RCT", "Survey"])).toEqual({ value: ["RCT"], flags: ["not_in_enum"], factor: CONFIDENCE.rejected });
    expect(coerceValue(list, ["Survey"]).value).toBeNull();
    const doses = spec({ data_type_primary: "number", examples: ["10", "20.0"], examples_mode: "enum" });
    expect(coerceValue(doses, 20).value).toBe(20);
    expect(coerceValue(doses, "10 mg").value).toBe(10);
    expect(coerceValue(doses, 15).flags).toEqual(["not_in_enum"]);
  });

  it("treats guide mode and enum mode without examples as free values", () => {
    expect(coerceValue(spec({ ...designs, examples_mode: "guide" }), "Survey").value).toBe("Survey");
    expect(coerceValue(spec({ data_type_primary: "text", examples_mode: "enum" }), "Survey").value).toBe("Survey");
  });
});

describe("parseNumber", () => {
  it("reads exactly one number, with thousands separators and signs", () => {
    expect(parseNumber("405,000 members")).toBe(405000);
    expect(parseNumber("17.1 months")).toBe(17.1);
    expect(parseNumber(".5")).toBe(0.5);
    expect(parseNumber("none")).toBeNull();
    expect(parseNumber("86/90")).toBeNull();
  });
});
