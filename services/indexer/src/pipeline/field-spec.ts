import type { IndexerField } from "@litrev/contracts";

/**
 * A field as the pipeline uses it: the client's definition plus what is derived from it once per
 * request (its property key in the reply schema, its qualifier, its allowed values).
 */
export interface FieldSpec {
  field: IndexerField;
  /** Property name in the reply schema: letters, digits and `_`, unique within the request. */
  key: string;
  qualifier: Qualifier;
  /** Allowed values in enum mode (strings for text types, numbers for number types); undefined otherwise. */
  allowed: readonly (string | number)[] | undefined;
  depth: "minimal" | "full";
}

/**
 * The `data_type_secondary` qualifiers the service enforces (docs/indexer.md, "Types"). Any other
 * value, `NA` included, is passed to the model as a format hint and not enforced.
 */
export type Qualifier = "integer" | "count" | "percentage" | "proportion" | "year" | "none";

const QUALIFIER_SYNONYMS: Record<string, Qualifier> = {
  integer: "integer",
  int: "integer",
  whole_number: "integer",
  count: "count",
  n: "count",
  percentage: "percentage",
  percent: "percentage",
  "%": "percentage",
  proportion: "proportion",
  fraction: "proportion",
  year: "year",
};

/** Qualifiers only apply to number types; for text types the secondary type is a hint. */
export function qualifierOf(field: IndexerField): Qualifier {
  if (field.data_type_primary !== "number" && field.data_type_primary !== "list_number") return "none";
  const key = (field.data_type_secondary ?? "").trim().toLowerCase().replace(/[\s-]+/g, "_");
  return QUALIFIER_SYNONYMS[key] ?? "none";
}

/** A property name the provider accepts whatever the field is called; the prompt maps it back. */
function fieldKeys(fields: readonly IndexerField[]): string[] {
  const used = new Set<string>();
  return fields.map((field, index) => {
    const base = field.name.replace(/[^A-Za-z0-9_]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 48) || `field_${index + 1}`;
    let key = base;
    for (let n = 2; used.has(key.toLowerCase()); n++) key = `${base}_${n}`;
    used.add(key.toLowerCase());
    return key;
  });
}

/** Enum mode needs examples; numbers are compared as numbers, so their examples are parsed. */
function allowedValues(field: IndexerField): (string | number)[] | undefined {
  if (field.examples_mode !== "enum" || !field.examples?.length) return undefined;
  if (field.data_type_primary === "yes_no") return undefined;
  if (field.data_type_primary === "number" || field.data_type_primary === "list_number") {
    const numbers = field.examples.map((e) => Number(e.trim())).filter((n) => Number.isFinite(n));
    return numbers.length ? [...new Set(numbers)] : undefined;
  }
  return [...new Set(field.examples.map((e) => e.trim()).filter(Boolean))];
}

export function fieldSpecs(fields: readonly IndexerField[]): FieldSpec[] {
  const keys = fieldKeys(fields);
  return fields.map((field, index) => ({
    field,
    key: keys[index] as string,
    qualifier: qualifierOf(field),
    allowed: allowedValues(field),
    depth: field.depth ?? "minimal",
  }));
}
