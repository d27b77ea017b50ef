import { z } from "zod";
import {
  type FieldSuggestion,
  type IndexerField,
  type RefineFieldsRequest,
  type RefineFieldsResponse,
  type ServiceConfigResponse,
} from "@litrev/contracts";
import type { StructuredCaller } from "../pipeline/extract-record";
import { askHelper } from "./ask";
import { describeContext, describeSampleRecords, nameKey } from "./sample-records";
import { SuggestedField } from "./suggest-fields";

export const RefineFieldsReply = z.object({
  suggestions: z.array(
    z.object({
      action: z.enum(["add", "modify", "remove", "merge"]),
      field: SuggestedField,
      rationale: z.string(),
      original_field_name: z.string().nullable(),
      target_field_name: z.string().nullable(),
    }),
  ),
});
export type RefineFieldsReply = z.infer<typeof RefineFieldsReply>;

function refineFieldsUserMessage(request: RefineFieldsRequest): string {
  const fields = request.fields.map((f) => JSON.stringify(f)).join("\n");
  return [describeContext(request.project_context), `Current fields (one JSON object per line):\n${fields}`, describeSampleRecords(request.sample_records)]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * Keeps suggestions whose references are real: `original_field_name` (modify, remove, merge) and
 * `target_field_name` (merge) must name input fields — matched loosely and returned with the
 * input's exact spelling — and an `add` must not re-add an existing field. Others are dropped.
 */
export function acceptRefinements(reply: RefineFieldsReply, inputs: readonly IndexerField[]): RefineFieldsResponse {
  const byKey = new Map(inputs.map((f) => [nameKey(f.name), f.name]));
  const resolve = (name: string | null) => (name ? byKey.get(nameKey(name)) : undefined);
  const suggestions: FieldSuggestion[] = [];
  for (const s of reply.suggestions) {
    const examples = s.field.examples.map((e) => e.trim()).filter(Boolean).slice(0, 100);
    const field: IndexerField = {
      name: s.field.name.trim().slice(0, 100),
      description: s.field.description.slice(0, 5_000),
      data_type_primary: s.field.data_type_primary,
      data_type_secondary: s.field.data_type_secondary.trim().slice(0, 50) || "NA",
      ...(examples.length ? { examples } : {}),
      examples_mode: examples.length ? s.field.examples_mode : "guide",
      depth: s.field.depth,
    };
    const original = resolve(s.original_field_name);
    const target = resolve(s.target_field_name);
    const base = { action: s.action, field, rationale: s.rationale };
    switch (s.action) {
      case "add":
        if (!field.name || byKey.has(nameKey(field.name))) continue;
        suggestions.push(base);
        break;
      case "modify":
      case "remove":
        if (!original) continue;
        if (s.action === "modify" && !field.name) field.name = original;
        suggestions.push({ ...base, original_field_name: original });
        break;
      case "merge":
        if (!original || !target || original === target) continue;
        if (!field.name) field.name = target;
        suggestions.push({ ...base, original_field_name: original, target_field_name: target });
        break;
    }
  }
  return { suggestions: suggestions.filter((s) => s.field.name) };
}

export async function refineFieldsLive(
  llm: StructuredCaller,
  config: ServiceConfigResponse,
  request: RefineFieldsRequest,
  providerKey: string | undefined,
  signal?: AbortSignal,
): Promise<RefineFieldsResponse> {
  const reply = await askHelper(llm, config, { prompt: "refineFields", schema: RefineFieldsReply, schemaName: "indexer_refine_fields", model: request.model, user: refineFieldsUserMessage(request), minOutputTokens: 4096 }, providerKey, signal);
  return acceptRefinements(reply.data, request.fields);
}
