import type { JsonSchema } from "../schema";

/** Where a generated value sits, for per-property rules. */
export interface SampleContext {
  /** Property name the value is generated for, if it is a property. */
  property: string | undefined;
  path: (string | number)[];
}

/** A fixed JSON value, or a function of where the value sits. */
export type FieldRule =
  | ((context: SampleContext) => unknown)
  | string
  | number
  | boolean
  | null
  | readonly unknown[]
  | { readonly [key: string]: unknown };

export interface SampleOptions {
  /** Values by property name, at any depth; they replace what the schema would produce. */
  fields?: Readonly<Record<string, FieldRule>> | undefined;
}

/** Recursive schemas stop growing here: arrays shrink to their minimum, nullable values go null. */
const MAX_DEPTH = 4;

const FORMAT_SAMPLES: Record<string, string> = {
  "date-time": "2025-01-15T12:00:00Z",
  date: "2025-01-15",
  time: "12:00:00",
  duration: "P1D",
  email: "author@example.org",
  hostname: "example.org",
  ipv4: "192.0.2.10",
  ipv6: "2001:db8::10",
  uuid: "123e4567-e89b-42d3-a456-426614174000",
};

/**
 * A value that conforms to a (strict-mode) JSON Schema, as a model following the schema would
 * produce: every property present, enums at their first value, arrays of two items, numbers
 * inside their bounds. Deterministic, so tests can predict it.
 */
export function sampleFromSchema(schema: JsonSchema, options: SampleOptions = {}): unknown {
  return sample(schema, schema, options, { property: undefined, path: [] }, 0);
}

function sample(node: unknown, root: JsonSchema, options: SampleOptions, context: SampleContext, depth: number): unknown {
  if (context.property !== undefined && options.fields && Object.hasOwn(options.fields, context.property)) {
    const rule = options.fields[context.property];
    return typeof rule === "function" ? (rule as (c: SampleContext) => unknown)(context) : rule;
  }
  const schema = resolve(node, root);
  if (!schema) return null;

  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf.filter((b) => resolve(b, root)?.type !== "null");
    // Deep in a recursive schema, prefer null where allowed so the value stays finite.
    if (branches.length === 0 || (depth >= MAX_DEPTH && branches.length < schema.anyOf.length)) return null;
    return sample(branches[0], root, options, context, depth);
  }
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.filter((v) => v !== null);
    return values.length > 0 ? values[0] : null;
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  if (depth >= MAX_DEPTH && types.includes("null")) return null;
  const type = types.find((t) => t !== "null") ?? types[0];

  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(properties)) {
        out[key] = sample(child, root, options, { property: key, path: [...context.path, key] }, depth + 1);
      }
      return out;
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const max = typeof schema.maxItems === "number" ? schema.maxItems : Number.POSITIVE_INFINITY;
      const count = depth >= MAX_DEPTH ? min : Math.min(max, Math.max(min, 2));
      return Array.from({ length: count }, (_, i) =>
        sample(schema.items, root, options, { property: undefined, path: [...context.path, i] }, depth + 1),
      );
    }
    case "string":
      if (typeof schema.format === "string" && FORMAT_SAMPLES[schema.format]) return FORMAT_SAMPLES[schema.format];
      return `sample ${context.property ?? "text"}`;
    case "integer":
      return Math.round(numberInBounds(schema, 1));
    case "number":
      return numberInBounds(schema, 0.5);
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return `sample ${context.property ?? "value"}`;
  }
}

function numberInBounds(schema: JsonSchema, fallback: number): number {
  const low = num(schema.minimum) ?? num(schema.exclusiveMinimum);
  const high = num(schema.maximum) ?? num(schema.exclusiveMaximum);
  if (low !== undefined && high !== undefined) return (low + high) / 2;
  if (low !== undefined) return low + 1;
  if (high !== undefined) return high - 1;
  return fallback;
}

function num(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function resolve(node: unknown, root: JsonSchema): JsonSchema | undefined {
  if (typeof node !== "object" || node === null) return undefined;
  const schema = node as JsonSchema;
  if (typeof schema.$ref !== "string") return schema;
  if (schema.$ref === "#") return root;
  const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1];
  const defs = root.$defs as Record<string, JsonSchema> | undefined;
  return name && defs ? defs[name] : undefined;
}
