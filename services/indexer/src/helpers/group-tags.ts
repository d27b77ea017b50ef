import { z } from "zod";
import { dataBlock, type GroupTagsRequest, type GroupTagsResponse, type ServiceConfigResponse, type TagGroup } from "@litrev/contracts";
import { toContractUsage } from "@litrev/llm";
import type { StructuredCaller } from "../pipeline/extract-record";
import { askHelper } from "./ask";
import { describeContext } from "./sample-records";

/** The model answers with value numbers, not copies: shorter, and a number cannot be misspelt. */
export const GroupTagsReply = z.object({
  groups: z.array(z.object({ name: z.string(), rationale: z.string(), value_ids: z.array(z.number().int()) })),
});
export type GroupTagsReply = z.infer<typeof GroupTagsReply>;

/** Where values the model left out go (docs/indexer.md, "group-tags"). */
export const UNGROUPED = "Other";

/** Distinct values in first-seen order (exact duplicates are one value). */
export function distinctValues(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function groupTagsUserMessage(request: GroupTagsRequest, values: readonly string[]): string {
  const hint = request.num_groups_hint ? `Suggested number of groups: ${request.num_groups_hint}` : "";
  // Extracted values come from paper text: data, numbered by their ids for value_ids.
  const list = dataBlock("values", values.map((value, i) => ({ id: i + 1, value })));
  return [describeContext(request.project_context), `Field: ${request.field_name}`, hint, `Values (refer to them by their id in value_ids):\n${list}`]
    .filter(Boolean)
    .join("\n\n");
}

/**
 * Every distinct value in exactly one group: a value the model put in several groups stays in
 * the first; numbers that name no value are ignored; values the model left out are collected in
 * a group named "Other" (appended, or merged into the model's own "Other"); empty groups are dropped.
 */
export function assignGroups(reply: GroupTagsReply, values: readonly string[]): TagGroup[] {
  const assigned = new Set<number>();
  const groups: TagGroup[] = [];
  for (const group of reply.groups) {
    const members: string[] = [];
    for (const id of group.value_ids) {
      const index = id - 1;
      if (index < 0 || index >= values.length || assigned.has(index)) continue;
      assigned.add(index);
      members.push(values[index] as string);
    }
    const name = group.name.trim() || `Group ${groups.length + 1}`;
    const same = groups.find((g) => g.name.toLowerCase() === name.toLowerCase());
    if (same) same.values.push(...members);
    else if (members.length) groups.push({ name, values: members, rationale: group.rationale });
  }
  const left = values.filter((_, i) => !assigned.has(i));
  if (left.length) {
    const other = groups.find((g) => g.name.toLowerCase() === UNGROUPED.toLowerCase());
    if (other) other.values.push(...left);
    else groups.push({ name: UNGROUPED, values: left, rationale: "Values the model did not place in any group" });
  }
  return groups;
}

export async function groupTagsLive(
  llm: StructuredCaller,
  config: ServiceConfigResponse,
  request: GroupTagsRequest,
  providerKey: string | undefined,
  signal?: AbortSignal,
): Promise<GroupTagsResponse> {
  const values = distinctValues(request.values);
  // Each value id costs about two tokens in the reply, plus names and rationales.
  const reply = await askHelper(llm, config, { prompt: "groupTags", schema: GroupTagsReply, schemaName: "indexer_group_tags", model: request.model, user: groupTagsUserMessage(request, values), minOutputTokens: 2_000 + 4 * values.length }, providerKey, signal);
  return { groups: assignGroups(reply.data, values), usage: toContractUsage(reply.usage) };
}
