import { z } from "zod";
import type { DataTypePrimary } from "@litrev/contracts";
import type { FieldSpec } from "./field-spec";

/** JSON Schema of one value as the provider is asked to write it. */
type JsonSchema = Record<string, unknown>;

const SCALAR: Record<Exclude<DataTypePrimary, "list_text" | "list_number">, string> = {
  text: "string",
  number: "number",
  yes_no: "boolean",
};

/**
 * What the provider must write for a field's `value`: the field's type or null, narrowed by
 * the qualifier (integers) and, in enum mode, to the allowed values. Ranges are stated in the
 * prompt rather than as keywords, because not every compatible server accepts them; the schema
 * carries no descriptions, since it is billed as input on every call and the prompt says it all.
 */
export function valueJsonSchema(spec: FieldSpec): JsonSchema {
  const primary = spec.field.data_type_primary;
  const integral = spec.qualifier === "integer" || spec.qualifier === "count" || spec.qualifier === "year";
  const itemType = primary === "list_text" || primary === "text" ? "string" : primary === "yes_no" ? "boolean" : integral ? "integer" : "number";
  const item: JsonSchema = { type: itemType };
  if (spec.allowed) item.enum = [...spec.allowed];
  if (primary === "list_text" || primary === "list_number") {
    return { type: ["array", "null"], items: item };
  }
  const scalar: JsonSchema = { type: [primary === "number" ? itemType : SCALAR[primary], "null"] };
  if (spec.allowed) scalar.enum = [...spec.allowed, null];
  return scalar;
}

/**
 * The reply schema for one field list: per field `{value, confidence, evidence}`. Leaves are
 * declared to the provider through JSON Schema metadata but decoded leniently (`z.any()`), so a
 * server that ignores the schema yields a value the service coerces and flags, instead of a
 * failed call; the object structure itself is still enforced by zod.
 */
export function buildReplySchema(specs: readonly FieldSpec[]) {
  const shape: Record<string, z.ZodType> = {};
  for (const spec of specs) {
    shape[spec.key] = z
      .object({
        value: z.any().meta(valueJsonSchema(spec)),
        confidence: z.any().meta({ type: "number" }),
        evidence: z.array(
          z.object({
            quote: z.any().meta({ type: "string" }),
            source: z.any().meta({ type: "string", enum: ["title", "abstract"] }),
          }),
        ),
      });
  }
  return z.object(shape);
}

export type ReplySchema = ReturnType<typeof buildReplySchema>;

/** One field's part of a decoded reply. */
export interface FieldReply {
  value?: unknown;
  confidence?: unknown;
  evidence: { quote?: unknown; source?: unknown }[];
}

const cache = new Map<string, ReplySchema>();
const CACHE_LIMIT = 200;

/**
 * The same field list always gets the same schema object: the LLM layer compiles a schema once
 * per object, and an identical schema keeps the provider's prompt cache warm across records.
 */
export function replySchemaFor(specs: readonly FieldSpec[]): ReplySchema {
  const fingerprint = JSON.stringify(specs.map((s) => [s.key, s.field.name, s.field.data_type_primary, s.qualifier, s.allowed ?? null]));
  let schema = cache.get(fingerprint);
  if (schema) {
    cache.delete(fingerprint);
  } else {
    schema = buildReplySchema(specs);
  }
  cache.set(fingerprint, schema);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  return schema;
}
