import { PicosElements } from "@litrev/contracts";
import { z } from "zod";

/**
 * What the provider is asked to return, per endpoint. Strict structured output needs every
 * property required, so these differ from the public responses where the spec has optional
 * fields; `live.ts` maps them and applies the spec's rules. Where a response has none, it is the reply.
 */
const CriterionDraft = z.object({
  category: z.string(),
  text: z.string(),
  description: z.string(),
  criterion_type: z.enum(["include", "exclude"]),
  confidence: z.number(),
  rationale: z.string(),
  title_abstract_assessable: z.boolean(),
});
export type CriterionDraft = z.infer<typeof CriterionDraft>;

export const CriteriaReply = z.object({ criteria: z.array(CriterionDraft) });

export const PicosReply = z.object({
  elements: PicosElements,
  gap_flags: z.array(z.string()),
  contraindications: z.array(z.object({ elements: z.array(z.string()), issue: z.string(), severity: z.enum(["low", "medium", "high"]) })),
});

export const ConsolidationReply = z.object({
  duplicate_groups: z.array(
    z.object({
      group_type: z.enum(["exact", "semantic", "overlap"]),
      category: z.string(),
      criterion_ids: z.array(z.number().int()),
      recommended_primary_id: z.number().int(),
      merge_rationale: z.string(),
      ai_confidence: z.number(),
    }),
  ),
  consolidation_proposals: z.array(
    z.object({
      category: z.string(),
      criterion_ids: z.array(z.number().int()),
      proposed_merged_criterion: z.string(),
      proposed_description: z.string(),
      proposed_type: z.enum(["include", "exclude"]),
      merge_rationale: z.string(),
      ai_confidence: z.number(),
    }),
  ),
});
export type ConsolidationReply = z.infer<typeof ConsolidationReply>;
