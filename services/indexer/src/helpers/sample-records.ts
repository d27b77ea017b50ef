import { dataBlock } from "@litrev/contracts";

/** Sample records as the helper prompts show them: a few, each cut to a readable length. */
const MAX_RECORDS = 5;
const MAX_CHARS = 1_500;

function textOf(record: Record<string, unknown>, keys: string[]): string {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === "string" && value.trim()) return value.trim();
  }
  return "";
}

export function describeSampleRecords(records: readonly Record<string, unknown>[] | null | undefined): string {
  if (!records?.length) return "";
  // Record text is data (libs/contracts prompt-data), never instructions.
  const samples = records.slice(0, MAX_RECORDS).map((record, i) => {
    const abstract = textOf(record, ["Abstract", "abstract"]);
    return { id: `s${i + 1}`, title: textOf(record, ["Title", "title"]), abstract: abstract.length > MAX_CHARS ? `${abstract.slice(0, MAX_CHARS)}…` : abstract };
  });
  return `Sample records:\n${dataBlock("records", samples)}`;
}

export function describeContext(context: { description: string; research_questions: string[] } | null | undefined): string {
  if (!context) return "";
  const lines: string[] = [];
  if (context.description.trim()) lines.push(`Project description: ${context.description.trim()}`);
  for (const question of context.research_questions) lines.push(`Research question: ${question}`);
  return lines.join("\n");
}

/** Case-, space- and punctuation-insensitive form of a field name, for comparing names. */
export function nameKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "");
}
