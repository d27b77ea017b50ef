import type { ServiceConfigResponse } from "@litrev/contracts";
import { PromptRegistry } from "@litrev/prompts";

/**
 * The indexer's prompts, in the shared registry (libs/prompts). Defaults live here; `PUT /v1/config/services/extraction` overrides them
 * without a restart: `system_prompt` replaces the shared preamble, and
 * `extra.prompts["indexer.<name>"]` replaces one prompt's instructions (docs/indexer.md).
 */
export const PREAMBLE =
  "You are a meticulous research assistant extracting data from scientific study records for a systematic " +
  "literature review. You only report what the record states, you copy quotations verbatim, and you say so " +
  "when a record does not state something.";

const prompt = (name: string, description: string, instructions: string) => ({ name, description, instructions });

export const PROMPTS = new PromptRegistry("indexer", PREAMBLE, {
  extraction: prompt(
    "extraction",
    "Extracts typed field values with verbatim evidence quotes from one record's title and abstract",
    [
      "Extract every listed field from the record in the records data block, using only its title and abstract.",
      "- value: the field's type exactly (text: a string; number: a plain number without units or a percent sign; yes_no: true or false; list_text: an array of strings; list_number: an array of numbers).",
      "- When the record does not state a field, set value to null and evidence to [], and give your confidence that it is not stated.",
      "- When a field lists allowed values, the value must be one of them exactly, otherwise null.",
      "- evidence: for a non-null value, the passages that support it, each copied character for character from the title or abstract (keep the original spelling, numbers and punctuation; never paraphrase, never join passages with an ellipsis), with source \"title\" or \"abstract\". Keep each quote to the words that matter (at most two sentences).",
      "- confidence: a number from 0 to 1, how likely the value is correct and complete given the text.",
      "- Depth minimal: the shortest value that answers the field and its single best quote. Depth full: a complete value with every relevant detail, and every supporting quote.",
    ].join("\n"),
  ),
  suggestFields: prompt(
    "suggest_fields",
    "Proposes extraction fields from the project context, PICOS elements and sample records",
    [
      "Propose data-extraction fields for this systematic review: the study characteristics, population, intervention, comparison, outcome and design details a reviewer would tabulate.",
      "- Give each field a short snake_case name, a one-sentence description saying exactly what to extract, a data_type_primary (text, number, yes_no, list_text or list_number) and, for numbers, a data_type_secondary such as integer, count, percentage, proportion or year (otherwise NA).",
      "- Use examples_mode enum with examples only when the possible values are a small closed set; otherwise examples_mode guide.",
      "- Never propose a field whose name is in the existing fields list, nor one that duplicates it under another name.",
      "- Add a warning for every field that is risky to extract from a title and abstract alone (often missing, ambiguous, or only in the full text), with a risk level and a fallback.",
    ].join("\n"),
  ),
  refineFields: prompt(
    "refine_fields",
    "Reviews field definitions and proposes additions, modifications, removals and merges",
    [
      "Review the extraction fields of this systematic review and suggest improvements.",
      "- action add: a missing field the review needs. action modify: a clearer description, better data type or examples for an existing field (original_field_name = its name). action remove: a field that cannot be extracted or is not needed (original_field_name = its name). action merge: two overlapping fields (original_field_name = the field merged away, target_field_name = the field it merges into, field = the merged definition).",
      "- original_field_name and target_field_name must be names of the given fields, spelled exactly.",
      "- Give a rationale for each suggestion. Suggest nothing for fields that are already good.",
    ].join("\n"),
  ),
  groupTags: prompt(
    "group_tags",
    "Groups the distinct values extracted for one field into a few named categories",
    [
      "Group the values extracted for one field into a small number of meaningful categories.",
      "- Put every value into exactly one group, copying each value exactly as given.",
      "- Name each group briefly and give a one-sentence rationale.",
      "- Aim for the suggested number of groups when one is given.",
    ].join("\n"),
  ),
});

export type PromptKey = keyof typeof PROMPTS.prompts;

export const PROMPT_LIST = PROMPTS.list();

/** The system message of one prompt under the live configuration. */
export function systemPrompt(config: ServiceConfigResponse, key: PromptKey): string {
  return PROMPTS.system(key, config);
}
