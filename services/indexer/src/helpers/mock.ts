import type {
  GroupTagsRequest,
  GroupTagsResponse,
  IndexerField,
  RefineFieldsRequest,
  RefineFieldsResponse,
  SuggestFieldsRequest,
  SuggestFieldsResponse,
  TagGroup,
} from "@litrev/contracts";
import { distinctValues } from "./group-tags";
import { nameKey } from "./sample-records";

/**
 * Mock answers of the field helpers (suggest-fields, refine-fields, group-tags): deterministic
 * placeholders (same request, same answer), no provider call, no key, no usage. Their texts say
 * they are placeholders, as the spec requires of mock responses.
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

/** Mock refine-fields: one `modify` of the first field (its description marked) and one `add` of a field not yet defined. */
export function mockRefineFields(request: RefineFieldsRequest): RefineFieldsResponse {
  const first = request.fields[0] as IndexerField;
  const defined = new Set(request.fields.map((f) => nameKey(f.name)));
  const added = CANDIDATES.find((f) => !defined.has(nameKey(f.name)));
  return {
    suggestions: [
      {
        action: "modify",
        field: { ...first, description: `${first.description}. ${NOTE}` },
        rationale: `${NOTE} A live request reviews each field's definition against the project.`,
        original_field_name: first.name,
      },
      ...(added ? [{ action: "add" as const, field: { ...added, description: `${added.description}. ${NOTE}` }, rationale: `${NOTE} A live request proposes fields the project is missing.` }] : []),
    ],
  };
}

/**
 * Mock group-tags: the distinct values, sorted, cut into `num_groups_hint` (default 3) runs of
 * about equal size; every value in exactly one group, as in a live answer.
 */
export function mockGroupTags(request: GroupTagsRequest): GroupTagsResponse {
  const values = distinctValues(request.values).sort((a, b) => a.localeCompare(b));
  const count = Math.min(values.length, request.num_groups_hint ?? 3);
  const size = Math.ceil(values.length / count);
  const groups: TagGroup[] = Array.from({ length: count }, (_, i) => ({
    name: `Placeholder group ${i + 1}`,
    values: values.slice(i * size, (i + 1) * size),
    rationale: NOTE,
  })).filter((g) => g.values.length > 0);
  return { groups, usage: { total_tokens: 0, estimated_cost_usd: 0 } };
}
