/**
 * A scripted "model" for the fake provider (`respond` hook of `startFakeProvider`), used by the
 * indexer's end-to-end tests and benchmark. It reads the record from the prompt and answers the
 * request's own reply schema the way a careful model would: values of the schema's types taken
 * from the abstract, with real quotes (some copied loosely, to exercise normalised matching) and,
 * on demand, invented quotes the service must drop.
 */
import { readDataBlocks } from "@litrev/contracts";
import type { FakeChatRequest } from "@litrev/llm/testing";

type JsonSchema = Record<string, unknown>;

export interface ResponderOptions {
  /** Whether to add an invented quote to this field of this record. */
  invent?: ((record: PromptRecord, key: string) => boolean) | undefined;
  /** Copy some quotes loosely (case, spacing, final period), as models do. Default true. */
  garble?: boolean | undefined;
  /** Replace a field's value (return undefined to keep the generated one). */
  value?: ((record: PromptRecord, key: string) => unknown) | undefined;
  /** Confidence the "model" reports. Default 0.8. */
  confidence?: number | undefined;
}

export interface PromptRecord {
  title: string;
  abstract: string;
}

/** Marks an invented quote so tests can recognise it. */
export const INVENTED_MARK = "zqx invented";

/** The record in an extraction prompt (the service puts it last, in a records data block). */
export function promptRecord(request: FakeChatRequest): PromptRecord | undefined {
  const user = request.messages.find((m) => m.role === "user")?.content;
  if (typeof user !== "string") return undefined;
  const record = readDataBlocks(user).find((block) => block.kind === "records")?.records[0];
  if (!record) return undefined;
  return { title: String(record.title ?? ""), abstract: String(record.abstract ?? "") };
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h;
}

function sentences(text: string): string[] {
  const parts = text.split(/(?<=[.!?])\s+/).filter((s) => s.trim().length >= 20);
  return parts.length ? parts : text.trim() ? [text.trim()] : [];
}

function numbersIn(text: string): number[] {
  return [...text.matchAll(/\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
}

function firstWords(text: string, from: number, count: number): string {
  return text.split(/\s+/).slice(from, from + count).join(" ");
}

/** The field schemas of an extraction reply schema, by key. */
function fieldSchemas(schema: JsonSchema): [string, JsonSchema][] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  return Object.entries(properties).map(([key, node]) => [key, ((node.properties ?? {}) as Record<string, JsonSchema>).value ?? {}]);
}

function baseType(node: JsonSchema): string {
  const type = node.type;
  return (Array.isArray(type) ? type.find((t) => t !== "null") : type) as string;
}

function valueFor(node: JsonSchema, sentence: string, abstract: string, h: number): unknown {
  const type = baseType(node);
  const options = Array.isArray(node.enum) ? node.enum.filter((v) => v !== null) : undefined;
  if (options?.length) return options[h % options.length];
  const numbers = numbersIn(sentence).length ? numbersIn(sentence) : numbersIn(abstract);
  switch (type) {
    case "string":
      return firstWords(sentence, 0, 6);
    case "integer":
      return numbers.length ? Math.round(numbers[0] as number) : null;
    case "number":
      return numbers[0] ?? null;
    case "boolean":
      return h % 2 === 0;
    case "array": {
      const items = (node.items ?? {}) as JsonSchema;
      const itemOptions = Array.isArray(items.enum) ? items.enum : undefined;
      if (itemOptions?.length) return [itemOptions[h % itemOptions.length]];
      if (items.type === "string") return [firstWords(sentence, 0, 3), firstWords(sentence, 3, 3)].filter(Boolean);
      return numbers.length ? numbers.slice(0, 3).map((n) => (items.type === "integer" ? Math.round(n) : n)) : null;
    }
    default:
      return null;
  }
}

/** How models copy loosely: lower case, single spaces, no final period. */
function garbled(quote: string): string {
  return quote.toLowerCase().replace(/\s+/g, " ").replace(/\.$/, "");
}

/** The `respond` hook: extraction requests get realistic answers, others the fake's default. */
export function extractionResponder(options: ResponderOptions = {}) {
  return (request: FakeChatRequest): unknown => {
    if (request.response_format?.json_schema?.name !== "indexer_extraction") return undefined;
    const record = promptRecord(request);
    const schema = request.response_format.json_schema.schema;
    if (!record || !schema) return undefined;
    const all = sentences(record.abstract);
    const reply: Record<string, unknown> = {};
    for (const [key, node] of fieldSchemas(schema)) {
      const h = hash(`${key}\u0000${record.title}`);
      const sentence = all.length ? (all[h % all.length] as string) : "";
      const override = options.value?.(record, key);
      const value = override !== undefined ? override : valueFor(node, sentence, record.abstract, h);
      const evidence: { quote: string; source: string }[] = [];
      if (value !== null && sentence) {
        const loose = options.garble !== false && h % 3 === 0;
        evidence.push({ quote: loose ? garbled(sentence) : sentence, source: "abstract" });
        if (h % 5 === 0 && record.title) evidence.push({ quote: firstWords(record.title, 0, 5), source: "title" });
      }
      if (options.invent?.(record, key)) evidence.push({ quote: `${INVENTED_MARK}: all ${h % 900} participants were followed for ten years`, source: "abstract" });
      reply[key] = { value, confidence: options.confidence ?? 0.8, evidence };
    }
    return reply;
  };
}
