import type { IndexerField, SuggestFieldsRequest, SuggestFieldsResponse } from "@litrev/contracts";
import { nameKey } from "./sample-records";

/**
 * Mock suggest-fields: deterministic placeholder fields (same request, same answer), no provider
 * call, no key. Descriptions say they are placeholders, as the spec requires of mock responses.
 */
const NOTE = "Placeholder from mock mode: no language model was called.";

const CANDIDATES: IndexerField[] = [
  { name: "study_design", description: "Design of the study (e.g. randomised controlled trial, cohort)", data_type_primary: "text", data_type_secondary: "NA", examples: ["randomised controlled trial", "cohort study", "before-after study"], examples_mode: "guide", depth: "minimal" },
  { name: "population", description: "Who was studied", data_type_primary: "text", data_type_secondary: "NA", depth: "full" },
  { name: "sample_size", description: "Number of participants analysed", data_type_primary: "number", data_type_secondary: "count", depth: "minimal" },
  { name: "intervention", description: "What was done to the intervention group", data_type_primary: "text", data_type_secondary: "NA", depth: "full" },
  { name: "comparison", description: "What the intervention was compared with", data_type_primary: "text", data_type_secondary: "NA", depth: "minimal" },
  { name: "outcomes", description: "Outcomes measured", data_type_primary: "list_text", data_type_secondary: "NA", depth: "full" },
  { name: "effect_reported", description: "Whether a statistically significant effect is reported", data_type_primary: "yes_no", data_type_secondary: "NA", depth: "minimal" },
  { name: "country", description: "Country or countries where the study took place", data_type_primary: "list_text", data_type_secondary: "NA", depth: "minimal" },
];

export function mockSuggestFields(request: SuggestFieldsRequest): SuggestFieldsResponse {
  const existing = new Set((request.existing_fields ?? []).map(nameKey));
  const fields = CANDIDATES.filter((f) => !existing.has(nameKey(f.name))).map((f) => ({
    ...f,
    description: `${f.description}. ${NOTE}`,
  }));
  const warnings = fields
    .filter((f) => f.name === "sample_size" || f.name === "country")
    .map((f) => ({
      field: f.name,
      risk_level: "medium" as const,
      reason: `${NOTE} A live request assesses whether ${f.name} is usually stated in abstracts.`,
      suggested_fallback: "Leave the value empty and check the full text",
    }));
  return { fields, warnings };
}
