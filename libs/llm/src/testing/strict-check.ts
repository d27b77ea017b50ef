import type { JsonSchema } from "../schema";

/** Keywords the provider refuses in strict mode (field notes), plus ones it ignores at best. */
const REJECTED = [
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "oneOf",
  "patternProperties",
  "propertyNames",
  "uniqueItems",
  "prefixItems",
  "contains",
  "default",
  "$schema",
  "minLength",
  "maxLength",
  "minProperties",
  "maxProperties",
];
const FORMATS = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"]);

/**
 * The first reason a provider in strict mode would reject this schema, or undefined. The fake
 * provider answers such requests with a 400, so converter mistakes fail tests end to end.
 */
export function strictSchemaProblem(schema: unknown): string | undefined {
  if (!isObject(schema) || schema.type !== "object") return "the root schema must be an object";
  return check(schema, "#");
}

function check(node: JsonSchema, path: string): string | undefined {
  for (const keyword of REJECTED) if (keyword in node) return `${path}: '${keyword}' is not permitted`;
  if (typeof node.format === "string" && !FORMATS.has(node.format)) return `${path}: format '${node.format}' is not supported`;
  if (node.type === "object" || (Array.isArray(node.type) && node.type.includes("object"))) {
    if (node.additionalProperties !== false) return `${path}: 'additionalProperties' is required to be supplied and to be false`;
    const properties = isObject(node.properties) ? node.properties : {};
    const required = Array.isArray(node.required) ? node.required : [];
    for (const key of Object.keys(properties)) {
      if (!required.includes(key)) return `${path}: 'required' is required to include every property; missing '${key}'`;
    }
    for (const [key, child] of Object.entries(properties)) {
      const problem = isObject(child) ? check(child, `${path}/properties/${key}`) : `${path}/properties/${key}: not a schema`;
      if (problem) return problem;
    }
  }
  const children: [string, unknown][] = [];
  if ("items" in node) children.push([`${path}/items`, node.items]);
  if (Array.isArray(node.anyOf)) node.anyOf.forEach((b, i) => children.push([`${path}/anyOf/${i}`, b]));
  if (isObject(node.$defs)) for (const [name, def] of Object.entries(node.$defs)) children.push([`${path}/$defs/${name}`, def]);
  for (const [childPath, child] of children) {
    if (!isObject(child)) return `${childPath}: not a schema`;
    const problem = check(child, childPath);
    if (problem) return problem;
  }
  return undefined;
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
