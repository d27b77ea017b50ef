import type { FieldSpec, Qualifier } from "./field-spec";
import { normalizeText } from "./normalize";

/** A field value after type checking, as it appears in an output record. */
export type FieldValue = string | number | boolean | string[] | number[] | null;

/**
 * Reasons a value or its confidence was changed by the service; listed in the output under
 * `flags` (docs/indexer.md, "Flags").
 */
export type ValueFlag =
  | "coerced"
  | "invalid_value"
  | "not_in_enum"
  | "out_of_range"
  | "quote_not_found"
  | "unverified";

export interface CoercedValue {
  value: FieldValue;
  flags: ValueFlag[];
  /** Multiplier for the model's confidence: 1 when the value was used as given. */
  factor: number;
}

/** Confidence multipliers (docs/indexer.md, "Confidence"). */
export const CONFIDENCE = {
  /** The reply had the wrong JSON type but converted cleanly ("12" for a number). */
  coerced: 0.9,
  /** The value was unusable (wrong type, outside the allowed values or range) and became null. */
  rejected: 0.5,
  /** At least one claimed quote was not found in the record. */
  quoteDropped: 0.5,
  /** Ceiling for a non-null value with no verified quote. */
  unverifiedCap: 0.3,
} as const;

/**
 * Turns whatever the model put in `value` into the field's type. Strict structured outputs make
 * a well-typed reply the norm, but self-hosted servers do not all enforce the schema, so every
 * reply is checked here and nothing unchecked reaches a client.
 */
export function coerceValue(spec: FieldSpec, raw: unknown): CoercedValue {
  const flags = new Set<ValueFlag>();
  const value = coerceType(spec, raw ?? null, flags);
  const checked = value === null ? null : applyConstraints(spec, value, flags);
  let factor = 1;
  if (flags.has("coerced")) factor *= CONFIDENCE.coerced;
  if (flags.has("invalid_value") || flags.has("not_in_enum") || flags.has("out_of_range")) factor *= CONFIDENCE.rejected;
  return { value: checked, flags: [...flags], factor };
}

function coerceType(spec: FieldSpec, raw: unknown, flags: Set<ValueFlag>): FieldValue {
  if (raw === null) return null;
  switch (spec.field.data_type_primary) {
    case "text":
      return toText(raw, flags);
    case "number":
      return toNumber(raw, flags);
    case "yes_no":
      return toBoolean(raw, flags);
    case "list_text":
      return toList(raw, flags, (item) => toText(item, flags));
    case "list_number":
      return toList(raw, flags, (item) => toNumber(item, flags));
  }
}

function toText(raw: unknown, flags: Set<ValueFlag>): string | null {
  if (typeof raw === "string") return raw.trim() || null;
  if (typeof raw === "number" && Number.isFinite(raw)) return (flags.add("coerced"), String(raw));
  if (typeof raw === "boolean") return (flags.add("coerced"), raw ? "yes" : "no");
  if (Array.isArray(raw) && raw.every((item) => typeof item === "string" || typeof item === "number")) {
    const joined = raw.map(String).map((s) => s.trim()).filter(Boolean).join("; ");
    return (flags.add("coerced"), joined || null);
  }
  return (flags.add("invalid_value"), null);
}

const NUMBER_IN_TEXT = /[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+/g;

/** A number, or a string that holds exactly one number ("140", "61%", "n = 1,075"). */
export function parseNumber(text: string): number | null {
  const matches = text.match(NUMBER_IN_TEXT);
  if (!matches || matches.length !== 1) return null;
  const value = Number((matches[0] as string).replace(/,/g, "").replace("−", "-"));
  return Number.isFinite(value) ? value : null;
}

function toNumber(raw: unknown, flags: Set<ValueFlag>): number | null {
  if (typeof raw === "number") return Number.isFinite(raw) ? raw : (flags.add("invalid_value"), null);
  if (typeof raw === "string") {
    if (!raw.trim()) return null;
    const parsed = parseNumber(raw);
    if (parsed === null) return (flags.add("invalid_value"), null);
    return (flags.add("coerced"), parsed);
  }
  return (flags.add("invalid_value"), null);
}

const YES = new Set(["yes", "y", "true", "1"]);
const NO = new Set(["no", "n", "false", "0"]);

function toBoolean(raw: unknown, flags: Set<ValueFlag>): boolean | null {
  if (typeof raw === "boolean") return raw;
  const text = typeof raw === "string" ? raw.trim().toLowerCase() : typeof raw === "number" ? String(raw) : undefined;
  if (text === "") return null;
  if (text !== undefined && YES.has(text)) return (flags.add("coerced"), true);
  if (text !== undefined && NO.has(text)) return (flags.add("coerced"), false);
  return (flags.add("invalid_value"), null);
}

function toList<T extends string | number>(
  raw: unknown,
  flags: Set<ValueFlag>,
  item: (value: unknown) => T | null,
): T[] | null {
  let items: unknown[];
  if (Array.isArray(raw)) items = raw;
  else if (typeof raw === "string" || typeof raw === "number") {
    flags.add("coerced");
    items = typeof raw === "string" ? raw.split(/\s*;\s*/) : [raw];
  } else return (flags.add("invalid_value"), null);
  const out: T[] = [];
  const seen = new Set<string>();
  for (const value of items) {
    if (value === null || value === undefined) continue;
    const converted = item(value);
    if (converted === null) continue;
    // Duplicates add nothing to a list of values; compare text loosely, numbers exactly.
    const key = typeof converted === "string" ? normalizeText(converted) : String(converted);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(converted);
  }
  // An empty list says as much as null: the record does not state the field.
  return out.length ? out : null;
}

function applyConstraints(spec: FieldSpec, value: Exclude<FieldValue, null>, flags: Set<ValueFlag>): FieldValue {
  if (Array.isArray(value)) {
    const kept = (value as (string | number)[])
      .map((item) => constrainScalar(spec, item, flags))
      .filter((item): item is string | number => item !== null);
    return kept.length ? (kept as string[] | number[]) : null;
  }
  if (typeof value === "boolean") return value;
  return constrainScalar(spec, value, flags);
}

function constrainScalar(spec: FieldSpec, value: string | number, flags: Set<ValueFlag>): string | number | null {
  let current: string | number | null = value;
  if (typeof current === "number") current = applyQualifier(spec.qualifier, current, flags);
  if (current !== null && spec.allowed) current = matchAllowed(spec.allowed, current, flags);
  return current;
}

/** Range and integrality rules of the supported qualifiers. */
function applyQualifier(qualifier: Qualifier, value: number, flags: Set<ValueFlag>): number | null {
  const integral = qualifier === "integer" || qualifier === "count" || qualifier === "year";
  let out = value;
  if (integral && !Number.isInteger(out)) {
    out = Math.round(out);
    flags.add("coerced");
  }
  const inRange =
    qualifier === "count" ? out >= 0
    : qualifier === "percentage" ? out >= 0 && out <= 100
    : qualifier === "proportion" ? out >= 0 && out <= 1
    : qualifier === "year" ? out >= 1000 && out <= 2100
    : true;
  if (!inRange) return (flags.add("out_of_range"), null);
  return out;
}

/** Enum mode: the allowed value the reply names (text compared loosely), or null. */
function matchAllowed(allowed: readonly (string | number)[], value: string | number, flags: Set<ValueFlag>): string | number | null {
  if (typeof value === "number") {
    if (allowed.includes(value)) return value;
    return (flags.add("not_in_enum"), null);
  }
  const wanted = normalizeText(value);
  const hit = allowed.find((option) => typeof option === "string" && normalizeText(option) === wanted);
  if (hit !== undefined) return hit;
  return (flags.add("not_in_enum"), null);
}
