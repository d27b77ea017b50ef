import { z } from "zod";
import { LIMIT_CEILINGS } from "./ceilings";
import { JsonObject } from "./common";
import { DEFAULT_MODEL } from "./models";

const text = (max = 20_000) => z.string().min(1).max(max);
const mock = z.boolean().default(false);
const model = (fallback: string) => z.string().min(1).max(200).default(fallback);
const questions = z.array(z.string().max(2_000)).max(50).default([]);
const CriterionKind = z.enum(["include", "exclude"]);

export const AnalyzeQuestionRequest = z.object({
  research_question: text(5_000),
  model: model(DEFAULT_MODEL.criteriaAnalyzeQuestion),
  mock,
});
export type AnalyzeQuestionRequest = z.infer<typeof AnalyzeQuestionRequest>;

export const AnalyzeQuestionResponse = z.object({
  status: z.enum(["ready", "could_improve"]),
  missing_elements: z.array(z.string()),
  suggestion: z.string(),
});
export type AnalyzeQuestionResponse = z.infer<typeof AnalyzeQuestionResponse>;

export const CriterionResponse = z.object({
  category: z.string(),
  text: z.string(),
  description: z.string(),
  criterion_type: CriterionKind,
  confidence: z.number().min(0).max(1).optional(),
  rationale: z.string().optional(),
  title_abstract_assessable: z.boolean(),
});
export type CriterionResponse = z.infer<typeof CriterionResponse>;

export const CriteriaListResponse = z.object({ criteria: z.array(CriterionResponse) });
export type CriteriaListResponse = z.infer<typeof CriteriaListResponse>;

export const GenerateCriteriaRequest = z.object({
  project_description: text(),
  research_questions: questions,
  additional_notes: z.string().max(20_000).optional(),
  existing_criteria: z.array(JsonObject).max(LIMIT_CEILINGS.criteria).default([]),
  criterion_type: CriterionKind.default("exclude"),
  model: model(DEFAULT_MODEL.criteria),
  mock,
});
export type GenerateCriteriaRequest = z.infer<typeof GenerateCriteriaRequest>;

export const PicosRequest = z.object({
  project_description: text(),
  research_questions: questions,
  model: model(DEFAULT_MODEL.criteria),
  mock,
});
export type PicosRequest = z.infer<typeof PicosRequest>;

export const PicosElements = z.object({
  population: z.string(),
  intervention: z.string(),
  comparison: z.string(),
  outcome: z.string(),
  study_design: z.string(),
});
export type PicosElements = z.infer<typeof PicosElements>;

export const PicosResponse = z.object({
  elements: PicosElements,
  gap_flags: z.array(z.string()),
  contraindications: z.array(JsonObject),
});
export type PicosResponse = z.infer<typeof PicosResponse>;

export const RefineContextRequest = z.object({
  description: text(),
  research_questions: questions,
  model: model(DEFAULT_MODEL.criteria),
  mock,
});
export type RefineContextRequest = z.infer<typeof RefineContextRequest>;

export const RefineContextResponse = z.object({
  refined_description: z.string(),
  refined_research_questions: z.array(z.string()),
  explanation: z.string(),
});
export type RefineContextResponse = z.infer<typeof RefineContextResponse>;

export const RefineCriteriaRequest = z.object({
  current_criteria: z.array(JsonObject).min(1).max(LIMIT_CEILINGS.criteria),
  conflicts: z.array(JsonObject).max(2_000).default([]),
  project_description: z.string().max(20_000).optional(),
  model: model(DEFAULT_MODEL.criteria),
  mock,
});
export type RefineCriteriaRequest = z.infer<typeof RefineCriteriaRequest>;

export const ConsolidateRequest = z.object({
  criteria: z.array(JsonObject).min(1).max(LIMIT_CEILINGS.criteria),
  project_description: z.string().max(20_000).optional(),
  research_questions: questions,
  model: model(DEFAULT_MODEL.criteria),
  mock,
});
export type ConsolidateRequest = z.infer<typeof ConsolidateRequest>;

export const DuplicateGroup = z.object({
  group_type: z.string(),
  category: z.string(),
  criterion_ids: z.array(z.number().int()),
  recommended_primary_id: z.number().int(),
  merge_rationale: z.string(),
  ai_confidence: z.number().min(0).max(1),
});
export type DuplicateGroup = z.infer<typeof DuplicateGroup>;

export const ConsolidationProposal = z.object({
  category: z.string(),
  criterion_ids: z.array(z.number().int()),
  proposed_merged_criterion: z.string(),
  proposed_description: z.string(),
  proposed_type: CriterionKind,
  merge_rationale: z.string(),
  ai_confidence: z.number().min(0).max(1),
});
export type ConsolidationProposal = z.infer<typeof ConsolidationProposal>;

export const ConsolidateResponse = z.object({
  duplicate_groups: z.array(DuplicateGroup),
  consolidation_proposals: z.array(ConsolidationProposal),
  warnings: z.array(z.string()),
});
export type ConsolidateResponse = z.infer<typeof ConsolidateResponse>;

/** Consolidation rules from the spec. */
export const CONSOLIDATION_MIN_CONFIDENCE = 0.75;
export const CONSOLIDATION_MAX_LABEL_WORDS = 10;
