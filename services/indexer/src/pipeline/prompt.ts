import { dataBlock, type ProjectContext } from "@litrev/contracts";
import type { FieldSpec } from "./field-spec";

const TYPE_WORDS: Record<string, string> = {
  text: "text",
  number: "number",
  yes_no: "yes/no (true or false)",
  list_text: "list of texts",
  list_number: "list of numbers",
};

const QUALIFIER_WORDS: Record<string, string> = {
  integer: "a whole number",
  count: "a whole number, 0 or more",
  percentage: "a percentage from 0 to 100, without the % sign",
  proportion: "a proportion from 0 to 1",
  year: "a four-digit year",
};

/** One field as the model reads it. */
function describeField(spec: FieldSpec): string {
  const { field } = spec;
  const secondary = field.data_type_secondary && field.data_type_secondary !== "NA" ? field.data_type_secondary : undefined;
  const qualifier = QUALIFIER_WORDS[spec.qualifier] ?? (secondary ? `format: ${secondary}` : undefined);
  const label = spec.key === field.name ? `"${spec.key}"` : `"${spec.key}" (field "${field.name}")`;
  const lines = [`- ${label}: ${TYPE_WORDS[field.data_type_primary]}${qualifier ? `, ${qualifier}` : ""}; depth ${spec.depth}.`];
  if (field.description.trim()) lines.push(`  What to extract: ${field.description.trim()}`);
  if (spec.allowed) lines.push(`  Allowed values (use exactly one of these, or null): ${spec.allowed.map((v) => JSON.stringify(v)).join(", ")}`);
  else if (field.examples?.length) lines.push(`  Examples of values (a guide, not a closed list): ${field.examples.map((v) => JSON.stringify(v)).join(", ")}`);
  return lines.join("\n");
}

/**
 * The part of the user message shared by every record of a request. It comes first so that the
 * provider's prompt cache covers it; the record, which changes every call, comes last.
 */
export function extractionPrefix(specs: readonly FieldSpec[], context: ProjectContext | null | undefined): string {
  const parts: string[] = [];
  if (context && (context.description.trim() || context.research_questions.length)) {
    parts.push("Project context (use it to interpret the fields, never as evidence):");
    if (context.description.trim()) parts.push(context.description.trim());
    for (const question of context.research_questions) parts.push(`Research question: ${question}`);
    parts.push("");
  }
  parts.push("Fields (answer each under its key):");
  for (const spec of specs) parts.push(describeField(spec));
  return parts.join("\n");
}

/** The record last, as data (libs/contracts prompt-data): its text can only ever be evidence. */
export function extractionUserMessage(prefix: string, record: { title: string; abstract: string }): string {
  return `${prefix}\n\nRecord:\n${dataBlock("records", [{ id: "r1", title: record.title.trim(), abstract: record.abstract.trim() }])}`;
}
