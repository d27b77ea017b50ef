import {
  CONSOLIDATION_MAX_LABEL_WORDS,
  CONSOLIDATION_MIN_CONFIDENCE,
  type ConsolidateResponse,
  type JsonObject,
} from "@litrev/contracts";
import type { ConsolidationReply } from "./replies";

/** The id a criterion is known by in a consolidate request: its own integer `id`, else its 1-based position. */
export function criterionIds(criteria: JsonObject[]): number[] {
  return criteria.map((criterion, index) => {
    const id = criterion.id;
    if (typeof id === "number" && Number.isInteger(id)) return id;
    if (typeof id === "string" && /^-?\d+$/.test(id.trim())) return Number(id);
    return index + 1;
  });
}

const wordCount = (text: string) => text.trim().split(/\s+/).filter(Boolean).length;

/**
 * The spec's consolidation rules applied to what the model proposed: groups and proposals below
 * 0.75 confidence are dropped, merged labels over 10 words are rejected, and ids that are not in
 * the request are ignored (a group left with fewer than two real criteria is no group at all).
 */
export function applyConsolidationRules(reply: ConsolidationReply, knownIds: ReadonlySet<number>): ConsolidateResponse {
  const warnings: string[] = [];
  const keepIds = (ids: number[]) => [...new Set(ids.filter((id) => knownIds.has(id)))];

  const duplicate_groups = reply.duplicate_groups.flatMap((group) => {
    const ids = keepIds(group.criterion_ids);
    if (group.ai_confidence < CONSOLIDATION_MIN_CONFIDENCE || ids.length < 2) return [];
    const primary = ids.includes(group.recommended_primary_id) ? group.recommended_primary_id : ids[0]!;
    return [{ ...group, criterion_ids: ids, recommended_primary_id: primary, ai_confidence: clamp01(group.ai_confidence) }];
  });

  const consolidation_proposals = reply.consolidation_proposals.flatMap((proposal) => {
    const ids = keepIds(proposal.criterion_ids);
    if (proposal.ai_confidence < CONSOLIDATION_MIN_CONFIDENCE || ids.length < 2) return [];
    if (wordCount(proposal.proposed_merged_criterion) > CONSOLIDATION_MAX_LABEL_WORDS) {
      warnings.push(
        `Rejected a proposal for criteria ${ids.join(", ")}: its merged label has more than ${CONSOLIDATION_MAX_LABEL_WORDS} words.`,
      );
      return [];
    }
    return [{ ...proposal, criterion_ids: ids, ai_confidence: clamp01(proposal.ai_confidence) }];
  });

  return { duplicate_groups, consolidation_proposals, warnings };
}

const clamp01 = (value: number) => Math.min(1, Math.max(0, value));
