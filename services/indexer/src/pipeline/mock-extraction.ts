import { ZERO_USAGE } from "@litrev/llm";
import type { StructuredCaller } from "./extract-record";
import type { FieldSpec } from "./field-spec";
import type { FieldReply } from "./reply-schema";

/** The text every mock value carries: the spec asks mock responses to say they are placeholders. */
export const MOCK_TEXT = "Placeholder from mock mode: no language model was called";

/** A canned value of the field's type: its first allowed value in enum mode, else a fixed one. */
function placeholder(spec: FieldSpec): unknown {
  if (spec.allowed?.length) return spec.allowed[0];
  const number = spec.qualifier === "year" ? 2000 : 0;
  switch (spec.field.data_type_primary) {
    case "text":
      return MOCK_TEXT;
    case "number":
      return number;
    case "yes_no":
      return false;
    case "list_text":
      return [MOCK_TEXT];
    case "list_number":
      return [number];
  }
}

/**
 * Stands in for the provider in mock mode (`mock: true` on /indexer/run and /indexer/jobs): every
 * record gets the same canned reply, which then goes through the real checks (types, enum, quotes),
 * so its output is schema-valid and marked unverified with confidence 0. No call, no key, no usage.
 */
export function mockExtractionCaller(specs: readonly FieldSpec[]): StructuredCaller {
  const data: Record<string, FieldReply> = Object.fromEntries(specs.map((spec) => [spec.key, { value: placeholder(spec), confidence: 0, evidence: [] }]));
  const reply = { data, choices: [data], usage: ZERO_USAGE, modelVersion: "mock" };
  return { structured: (async () => reply) as unknown as StructuredCaller["structured"] };
}
