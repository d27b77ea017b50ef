import { z } from "zod";
import {
  DataTypePrimary,
  RESERVED_FIELD_NAMES,
  type ExtractionWarning,
  type IndexerField,
  type ServiceConfigResponse,
  type SuggestFieldsRequest,
  type SuggestFieldsResponse,
} from "@litrev/contracts";
import type { StructuredCaller } from "../pipeline/extract-record";
import { askHelper } from "./ask";
import { describeContext, describeSampleRecords, nameKey } from "./sample-records";

/** What the model writes: complete field definitions (strict mode has no optional properties). */
export const SuggestedField = z.object({
  name: z.string(),
  description: z.string(),
  data_type_primary: DataTypePrimary,
  data_type_secondary: z.string(),
  examples: z.array(z.string()),
  examples_mode: z.enum(["guide", "enum"]),
  depth: z.enum(["minimal", "full"]),
});
export const SuggestFieldsReply = z.object({
  fields: z.array(SuggestedField),
  warnings: z.array(
    z.object({
      field: z.string(),
      risk_level: z.enum(["low", "medium", "high"]),
      reason: z.string(),
      suggested_fallback: z.string(),
    }),
  ),
});
export type SuggestFieldsReply = z.infer<typeof SuggestFieldsReply>;

function describePico(pico: Record<string, unknown> | null | undefined): string {
  if (!pico) return "";
  const lines = Object.entries(pico)
    .filter(([, value]) => value !== null && value !== undefined && value !== "")
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  return lines.length ? `PICOS elements:\n${lines.join("\n")}` : "";
}

function suggestFieldsUserMessage(request: SuggestFieldsRequest): string {
  const existing = request.existing_fields?.length ? `Existing fields (do not propose these again): ${request.existing_fields.join(", ")}` : "Existing fields: none";
  return [describeContext(request.project_context), describePico(request.pico), existing, describeSampleRecords(request.sample_records)]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * Keeps the model's proposals that are usable: valid names, not already defined (compared
 * loosely, so `Sample size` and `sample_size` are the same field), not repeated, not reserved;
 * warnings only for fields that are proposed.
 */
export function acceptSuggestions(reply: SuggestFieldsReply, existing: readonly string[] | null | undefined): SuggestFieldsResponse {
  const taken = new Set([...(existing ?? []), ...RESERVED_FIELD_NAMES].map(nameKey));
  const fields: IndexerField[] = [];
  for (const proposal of reply.fields) {
    const name = proposal.name.trim().slice(0, 100);
    if (!name || !nameKey(name) || taken.has(nameKey(name))) continue;
    taken.add(nameKey(name));
    const examples = proposal.examples.map((e) => e.trim()).filter(Boolean).slice(0, 100);
    fields.push({
      name,
      description: proposal.description.trim().slice(0, 5_000),
      data_type_primary: proposal.data_type_primary,
      data_type_secondary: proposal.data_type_secondary.trim().slice(0, 50) || "NA",
      ...(examples.length ? { examples } : {}),
      // enum mode without examples would restrict to nothing.
      examples_mode: examples.length ? proposal.examples_mode : "guide",
      depth: proposal.depth,
    });
  }
  const proposed = new Map(fields.map((f) => [nameKey(f.name), f.name]));
  const warnings: ExtractionWarning[] = reply.warnings
    .filter((w) => proposed.has(nameKey(w.field)))
    .map((w) => ({ ...w, field: proposed.get(nameKey(w.field)) as string }));
  return { fields, warnings };
}

export async function suggestFieldsLive(
  llm: StructuredCaller,
  config: ServiceConfigResponse,
  request: SuggestFieldsRequest,
  providerKey: string | undefined,
  signal?: AbortSignal,
): Promise<SuggestFieldsResponse> {
  const reply = await askHelper(llm, config, { prompt: "suggestFields", schema: SuggestFieldsReply, schemaName: "indexer_suggest_fields", model: request.model, user: suggestFieldsUserMessage(request), minOutputTokens: 4096 }, providerKey, signal);
  return acceptSuggestions(reply.data, request.existing_fields);
}
