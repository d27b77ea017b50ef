import type { z } from "zod";
import type { ValidationIssue } from "./errors";
import { coerceLaxly } from "./lax-input";

type Loc = ValidationIssue["loc"];
type Issue = z.core.$ZodIssue;

/**
 * Parses with `input` kept on issues, so a missing field can be told from a wrong type. Values a
 * lax validator accepts ("42" for a number, "true" or 0/1 for a boolean) are coerced and the body
 * parsed again (a bounded number of times: each pass fixes what the last one found).
 */
export function parseOrIssues<S extends z.ZodType>(
  schema: S,
  data: unknown,
  root: string,
): { success: true; data: z.output<S> } | { success: false; issues: ValidationIssue[] } {
  let result = schema.safeParse(data, { reportInput: true });
  for (let pass = 0; !result.success && pass < LAX_PASSES && coerceLaxly(data, result.error.issues); pass++) {
    result = schema.safeParse(data, { reportInput: true });
  }
  if (result.success) return { success: true, data: result.data };
  return { success: false, issues: zodIssuesToValidation(result.error.issues, root, data) };
}

/** Passes of lax coercion: a value inside a union can surface only once its siblings parse. */
const LAX_PASSES = 3;

/**
 * Zod issues in the spec's validation shape, `{type, loc, msg}`, using the type names and messages
 * FastAPI clients already recognise (`missing` / "Field required", `string_type`, `enum`, …).
 * `data` is the unparsed input: a coerced value (query strings) reaches zod as NaN whether it was
 * absent or unparsable, so the original tells the two apart.
 */
export function zodIssuesToValidation(issues: readonly Issue[], root: string, data?: unknown): ValidationIssue[] {
  return issues.flatMap((issue) => {
    const loc: Loc = [root, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))];
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ type: "extra_forbidden", loc: [...loc, key], msg: "Extra inputs are not permitted" }));
    }
    const { type, msg } = describe(issue, data === undefined ? undefined : { value: valueAt(data, issue.path) });
    return [{ type, loc, msg }];
  });
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

const TYPE_NAMES: Record<string, [string, string]> = {
  string: ["string_type", "Input should be a valid string"],
  number: ["float_type", "Input should be a valid number"],
  int: ["int_type", "Input should be a valid integer"],
  boolean: ["bool_type", "Input should be a valid boolean"],
  array: ["list_type", "Input should be a valid list"],
  object: ["model_type", "Input should be a valid dictionary or object to extract fields from"],
  record: ["dict_type", "Input should be a valid dictionary"],
  null: ["none_required", "Input should be None"],
};

function describe(issue: Issue, original?: { value: unknown }): { type: string; msg: string } {
  switch (issue.code) {
    case "invalid_type": {
      const raw = original ? original.value : issue.input;
      if (raw === undefined) return { type: "missing", msg: "Field required" };
      if (issue.expected === "number" && typeof raw === "string") {
        return { type: "float_parsing", msg: "Input should be a valid number, unable to parse string as a number" };
      }
      if (issue.expected === "int" && typeof issue.input === "number") {
        return { type: "int_from_float", msg: "Input should be a valid integer, got a number with a fractional part" };
      }
      const [type, msg] = TYPE_NAMES[issue.expected] ?? ["type_error", `Input should be of type ${issue.expected}`];
      return { type, msg };
    }
    case "invalid_value": {
      const values = issue.values.map((v) => `'${String(v)}'`);
      const list = values.length > 1 ? `${values.slice(0, -1).join(", ")} or ${values.at(-1)}` : (values[0] ?? "");
      return { type: values.length > 1 ? "enum" : "literal_error", msg: `Input should be ${list}` };
    }
    case "too_small":
      return bound(issue.origin, "min", issue.minimum, issue.inclusive);
    case "too_big":
      return bound(issue.origin, "max", issue.maximum, issue.inclusive);
    case "invalid_union":
      return { type: "union_type", msg: "Input does not match any accepted type" };
    case "invalid_format":
      return { type: "string_pattern_mismatch", msg: `String should match format '${issue.format}'` };
    case "custom":
      return { type: "value_error", msg: `Value error, ${issue.message}` };
    default:
      return { type: "value_error", msg: issue.message };
  }
}

function bound(origin: string, side: "min" | "max", limit: number | bigint, inclusive = true) {
  const n = Number(limit);
  if (origin === "string") {
    const unit = n === 1 ? "character" : "characters";
    return side === "min"
      ? { type: "string_too_short", msg: `String should have at least ${n} ${unit}` }
      : { type: "string_too_long", msg: `String should have at most ${n} ${unit}` };
  }
  if (origin === "array" || origin === "set") {
    const unit = n === 1 ? "item" : "items";
    return side === "min"
      ? { type: "too_short", msg: `List should have at least ${n} ${unit}` }
      : { type: "too_long", msg: `List should have at most ${n} ${unit}` };
  }
  if (side === "min") {
    return inclusive
      ? { type: "greater_than_equal", msg: `Input should be greater than or equal to ${n}` }
      : { type: "greater_than", msg: `Input should be greater than ${n}` };
  }
  return inclusive
    ? { type: "less_than_equal", msg: `Input should be less than or equal to ${n}` }
    : { type: "less_than", msg: `Input should be less than ${n}` };
}
