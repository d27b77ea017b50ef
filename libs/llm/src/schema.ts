import { z } from "zod";

/*
 * Why a post-pass of our own over zod's converter (checked in schema.test.ts, "library
 * conversions"): zod 4's `z.toJSONSchema` does the conversion (below), but its output is not a
 * strict structured-output schema (objects stay open, optional properties are left out of
 * `required`, zod adds a regex next to `format` and safe-integer bounds to every integer). The
 * openai package's `zodResponseFormat` throws on any `.optional()` field, which our reply
 * schemas use, and emits `$schema`. Neither rewrites optional → nullable nor undoes it when
 * decoding (`dropAddedNulls`), nor keeps keywords in a fixed order for the prompt cache. So
 * this file keeps only the strict-mode part: close objects, require every property (optional
 * ones nullable), drop or refuse what strict mode rejects, canonical keyword order.
 */

/** One JSON Schema node as plain data. */
export type JsonSchema = { [keyword: string]: unknown };

/** The `response_format` of a Chat Completions request using strict structured outputs. */
export interface JsonSchemaResponseFormat {
  type: "json_schema";
  json_schema: { name: string; strict: true; schema: JsonSchema };
}

/**
 * Keywords strict structured outputs accept, in the order we emit them. Emitting a fixed order
 * (not whatever order zod produced) keeps the schema byte-identical across builds, and the
 * schema is part of the provider's cached prompt prefix.
 */
const KEPT_KEYWORDS = [
  "title",
  "description",
  "type",
  "enum",
  "pattern",
  "format",
  "multipleOf",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "items",
  "minItems",
  "maxItems",
  "properties",
  "required",
  "additionalProperties",
  "anyOf",
  "$ref",
  "$defs",
] as const;

/** String formats the provider understands in strict mode; others are dropped (zod still checks them). */
const STRICT_FORMATS = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]);

/** Constructs with no faithful strict-mode equivalent: refusing them beats sending a schema that means something else. */
const UNSUPPORTED = ["allOf", "not", "if", "then", "else", "prefixItems", "dependentSchemas", "dependentRequired", "contains"];

export class StrictSchemaError extends Error {
  override readonly name = "StrictSchemaError";
}

/**
 * Converts a zod object schema into the JSON Schema subset of strict structured outputs:
 * an object root, every property required (optional ones made nullable), `additionalProperties:
 * false` everywhere, and keywords the provider rejects removed. The input side of the schema is
 * used because the model's reply is what we parse, before transforms and defaults apply.
 */
export function toStrictJsonSchema(schema: z.ZodType): JsonSchema {
  return strictFromSource(inputJsonSchema(schema));
}

/** zod's own JSON Schema for what the model must write (the schema's input side). */
function inputJsonSchema(schema: z.ZodType): JsonSchema {
  try {
    return z.toJSONSchema(schema, { io: "input", target: "draft-2020-12", cycles: "ref", reused: "inline" }) as JsonSchema;
  } catch (error) {
    throw new StrictSchemaError(`schema cannot be expressed as JSON Schema: ${(error as Error).message}`);
  }
}

function strictFromSource(source: JsonSchema): JsonSchema {
  if (source.type !== "object") throw new StrictSchemaError("the root of a structured-output schema must be a z.object()");
  return strictNode(source, "#");
}

function strictNode(input: unknown, path: string): JsonSchema {
  if (!isSchemaObject(input)) throw new StrictSchemaError(`${path}: boolean schemas are not supported`);
  for (const keyword of UNSUPPORTED) {
    if (keyword in input) throw new StrictSchemaError(`${path}: "${keyword}" is not supported by strict structured outputs`);
  }
  const node: JsonSchema = { ...input };
  // Equivalent rewrites into keywords strict mode knows.
  if ("const" in node) {
    node.enum = [node.const];
    delete node.const;
  }
  if (Array.isArray(node.oneOf)) {
    // The exclusivity of oneOf is lost, but every reply is validated with zod afterwards.
    node.anyOf = node.oneOf;
    delete node.oneOf;
  }
  if (!("type" in node) && !("anyOf" in node) && !("$ref" in node) && !("enum" in node)) {
    throw new StrictSchemaError(`${path}: values of any type (z.any(), z.unknown()) are not supported; give the field a type`);
  }

  if (Array.isArray(node.type)) {
    const types = node.type as string[];
    const nonNull = types.filter((t) => t !== "null");
    if (nonNull.length > 1) {
      // ["string","number"] is not accepted everywhere; an anyOf of single types is.
      const { type: _ignored, description, title, ...rest } = node;
      return canonical({
        ...(title === undefined ? {} : { title }),
        ...(description === undefined ? {} : { description }),
        anyOf: types.map((t, i) => strictNode({ ...rest, type: t }, `${path}/anyOf/${i}`)),
      });
    }
  }

  if (node.type === "object" || "properties" in node) {
    const extra = node.additionalProperties;
    const isRecord = (isSchemaObject(extra) && Object.keys(extra).length > 0) || "propertyNames" in node || "patternProperties" in node;
    if (isRecord) {
      throw new StrictSchemaError(`${path}: records (objects with free-form keys) are not supported; use an array of key/value objects`);
    }
    const properties = isSchemaObject(node.properties) ? node.properties : {};
    const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
    const strictProperties: JsonSchema = {};
    for (const [key, value] of Object.entries(properties)) {
      const converted = strictNode(value, `${path}/properties/${key}`);
      strictProperties[key] = required.has(key) ? converted : makeNullable(converted);
    }
    node.properties = strictProperties;
    node.required = Object.keys(strictProperties);
    // Also closes z.looseObject(): extra keys are allowed by zod, never required by it.
    node.additionalProperties = false;
  }

  if (node.type === "array" || "items" in node) {
    if (!isSchemaObject(node.items)) throw new StrictSchemaError(`${path}: arrays need an item schema`);
    node.items = strictNode(node.items, `${path}/items`);
  }
  if (Array.isArray(node.anyOf)) node.anyOf = node.anyOf.map((branch, i) => strictNode(branch, `${path}/anyOf/${i}`));
  if (isSchemaObject(node.$defs)) {
    node.$defs = Object.fromEntries(
      Object.entries(node.$defs).map(([name, def]) => [name, strictNode(def, `${path}/$defs/${name}`)]),
    );
  }

  if (typeof node.format === "string") {
    // zod adds its own regex next to a format; the format says the same thing more portably.
    if (STRICT_FORMATS.has(node.format)) delete node.pattern;
    else delete node.format;
  }
  // zod bounds every integer to the safe-integer range: noise in a prompt-cached schema.
  if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
  if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
  return canonical(node);
}

/** Keeps only supported keywords, in a fixed order. */
function canonical(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const keyword of KEPT_KEYWORDS) if (node[keyword] !== undefined) out[keyword] = node[keyword];
  return out;
}

/** Strict mode has no optional properties; an optional field becomes a required, nullable one. */
function makeNullable(node: JsonSchema): JsonSchema {
  if (acceptsNull(node)) return node;
  // Primitives take a type list (["string","null"]); objects and arrays get an anyOf with null,
  // the form the provider documents for structured types.
  const primitive = typeof node.type === "string" && node.type !== "object" && node.type !== "array";
  if (primitive && !("anyOf" in node) && !("$ref" in node)) {
    const out: JsonSchema = { ...node, type: [node.type, "null"] };
    if (Array.isArray(node.enum)) out.enum = [...node.enum, null];
    return canonical(out);
  }
  if (Array.isArray(node.type) && !node.type.includes("object") && !node.type.includes("array")) {
    return canonical({ ...node, type: [...node.type, "null"] });
  }
  const { description, title, ...rest } = node;
  const branches = Array.isArray(rest.anyOf) && Object.keys(rest).length === 1 ? (rest.anyOf as JsonSchema[]) : [canonical(rest)];
  return canonical({
    ...(title === undefined ? {} : { title }),
    ...(description === undefined ? {} : { description }),
    anyOf: [...branches, { type: "null" }],
  });
}

function acceptsNull(node: JsonSchema): boolean {
  if (node.type === "null") return true;
  if (Array.isArray(node.type) && node.type.includes("null")) return true;
  if (Array.isArray(node.enum) && node.enum.includes(null) && node.type === undefined) return true;
  return Array.isArray(node.anyOf) && node.anyOf.some((branch) => isSchemaObject(branch) && acceptsNull(branch));
}

function isSchemaObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A schema name the provider accepts: letters, digits, `_` and `-`, at most 64 characters. */
export function schemaName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
  return cleaned.length > 0 ? cleaned : "response";
}

export function responseFormat(name: string, schema: z.ZodType): JsonSchemaResponseFormat {
  return { type: "json_schema", json_schema: { name: schemaName(name), strict: true, schema: toStrictJsonSchema(schema) } };
}

export type DecodeResult<T> = { ok: true; value: T } | { ok: false; problem: string };

/** A schema prepared once: the request's `response_format` and the decoder for its replies. */
export interface StructuredFormat<S extends z.ZodType> {
  readonly schema: S;
  readonly responseFormat: JsonSchemaResponseFormat;
  /** JSON.parse, undo the optional→nullable rewrite, then validate with zod. */
  decode(text: string): DecodeResult<z.output<S>>;
}

const compiled = new WeakMap<z.ZodType, Map<string, StructuredFormat<z.ZodType>>>();

/** Cached per schema and name: converting on every call would waste CPU on hot paths. */
export function structuredFormat<S extends z.ZodType>(name: string, schema: S): StructuredFormat<S> {
  let byName = compiled.get(schema);
  if (!byName) compiled.set(schema, (byName = new Map()));
  const existing = byName.get(name);
  if (existing) return existing as StructuredFormat<S>;

  const source = inputJsonSchema(schema);
  const format: StructuredFormat<S> = {
    schema,
    responseFormat: { type: "json_schema", json_schema: { name: schemaName(name), strict: true, schema: strictFromSource(source) } },
    decode(text) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        return { ok: false, problem: `the reply is not valid JSON (${(error as Error).message})` };
      }
      const result = schema.safeParse(dropAddedNulls(source, value, source));
      if (result.success) return { ok: true, value: result.data };
      return { ok: false, problem: summariseIssues(result.error.issues) };
    },
  };
  byName.set(name, format as StructuredFormat<z.ZodType>);
  return format;
}

/**
 * The model answers `null` for a property we made nullable only because it was optional;
 * zod's `.optional()` wants the key absent instead. Walks the original (pre-strict) schema and
 * deletes those nulls; nulls the schema itself allows (`.nullish()`) are kept.
 */
function dropAddedNulls(node: unknown, value: unknown, root: JsonSchema, depth = 0): unknown {
  const schema = resolveRef(node, root);
  if (!schema || depth > 64 || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    if (isSchemaObject(schema.items)) for (const item of value) dropAddedNulls(schema.items, item, root, depth + 1);
    else if (Array.isArray(schema.anyOf)) {
      const arrayBranch = schema.anyOf.map((b) => resolveRef(b, root)).find((b) => b?.type === "array");
      if (arrayBranch) dropAddedNulls(arrayBranch, value, root, depth + 1);
    }
    return value;
  }
  const record = value as Record<string, unknown>;
  const objectSchema = isSchemaObject(schema.properties) ? schema : bestObjectBranch(schema, record, root);
  if (!objectSchema || !isSchemaObject(objectSchema.properties)) return value;
  const required = new Set(Array.isArray(objectSchema.required) ? (objectSchema.required as string[]) : []);
  for (const [key, child] of Object.entries(record)) {
    const childSchema = resolveRef(objectSchema.properties[key], root);
    if (child === null && !required.has(key) && !(childSchema && acceptsNull(childSchema))) delete record[key];
    else if (key in objectSchema.properties) dropAddedNulls(objectSchema.properties[key], child, root, depth + 1);
  }
  return value;
}

/** For a union of objects, the branch whose property names match the value best. */
function bestObjectBranch(schema: JsonSchema, value: Record<string, unknown>, root: JsonSchema): JsonSchema | undefined {
  const branches = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : [];
  let best: JsonSchema | undefined;
  let bestScore = -1;
  for (const raw of branches) {
    const branch = resolveRef(raw, root);
    if (!branch || !isSchemaObject(branch.properties)) continue;
    const properties = branch.properties;
    const score = Object.keys(value).filter((key) => key in properties).length;
    if (score > bestScore) [best, bestScore] = [branch, score];
  }
  return best;
}

function resolveRef(node: unknown, root: JsonSchema): JsonSchema | undefined {
  if (!isSchemaObject(node)) return undefined;
  if (typeof node.$ref !== "string") return node;
  if (node.$ref === "#") return root;
  const match = /^#\/\$defs\/(.+)$/.exec(node.$ref);
  const defs = root.$defs;
  if (!match || !isSchemaObject(defs)) return undefined;
  const target = defs[match[1] as string];
  return isSchemaObject(target) ? target : undefined;
}

function summariseIssues(issues: readonly z.core.$ZodIssue[]): string {
  const shown = issues.slice(0, 5).map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`);
  const more = issues.length > shown.length ? `; and ${issues.length - shown.length} more` : "";
  return `the reply does not match the schema (${shown.join("; ")}${more})`;
}
