import { describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { structuredFormat, toStrictJsonSchema } from "@litrev/llm";
import { strictSchemaProblem } from "@litrev/llm/testing";
import { fieldSpecs } from "./field-spec";
import { buildReplySchema, replySchemaFor, valueJsonSchema } from "./reply-schema";

const fields: IndexerField[] = [
  { name: "Study design", description: "d", data_type_primary: "text", data_type_secondary: "NA", examples: ["RCT", "Cohort"], examples_mode: "enum" },
  { name: "Sample size", description: "d", data_type_primary: "number", data_type_secondary: "count" },
  { name: "Effect reported?", description: "d", data_type_primary: "yes_no", data_type_secondary: "NA" },
  { name: "Outcomes", description: "d", data_type_primary: "list_text", data_type_secondary: "NA" },
  { name: "Percentages", description: "d", data_type_primary: "list_number", data_type_secondary: "percentage" },
  { name: "study design", description: "same key after cleaning", data_type_primary: "text", data_type_secondary: "NA" },
];

describe("reply schema per field list", () => {
  const specs = fieldSpecs(fields);

  it("gives every field a provider-safe, unique key", () => {
    expect(specs.map((s) => s.key)).toEqual(["Study_design", "Sample_size", "Effect_reported", "Outcomes", "Percentages", "study_design_2"]);
  });

  it("types each value by data_type_primary, nullable, narrowed by qualifier and enum", () => {
    expect(valueJsonSchema(specs[0]!)).toMatchObject({ type: ["string", "null"], enum: ["RCT", "Cohort", null] });
    expect(valueJsonSchema(specs[1]!)).toMatchObject({ type: ["integer", "null"] });
    expect(valueJsonSchema(specs[2]!)).toMatchObject({ type: ["boolean", "null"] });
    expect(valueJsonSchema(specs[3]!)).toMatchObject({ type: ["array", "null"], items: { type: "string" } });
    expect(valueJsonSchema(specs[4]!)).toMatchObject({ type: ["array", "null"], items: { type: "number" } });
  });

  it("is a valid strict structured-output schema", () => {
    const json = toStrictJsonSchema(buildReplySchema(specs));
    expect(strictSchemaProblem(json)).toBeUndefined();
    expect(Object.keys(json.properties as object)).toEqual(specs.map((s) => s.key));
  });

  it("decodes replies whose leaves have the wrong type (the service coerces them) but not a wrong structure", () => {
    const format = structuredFormat("t", buildReplySchema(specs.slice(1, 2)));
    expect(format.decode(JSON.stringify({ Sample_size: { value: "140", confidence: "0.9", evidence: [{ quote: "x", source: "body" }] } })).ok).toBe(true);
    expect(format.decode(JSON.stringify({ Sample_size: { value: 1 } })).ok).toBe(false);
    expect(format.decode(JSON.stringify({})).ok).toBe(false);
  });

  it("hands out the same schema object for the same field list", () => {
    expect(replySchemaFor(fieldSpecs(fields))).toBe(replySchemaFor(fieldSpecs(structuredClone(fields))));
    expect(replySchemaFor(fieldSpecs(fields.slice(1)))).not.toBe(replySchemaFor(fieldSpecs(fields)));
  });
});
