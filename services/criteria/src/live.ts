import { AnalyzeQuestionResponse, DEFAULT_MODEL, dataBlock, RefineContextResponse, type CriterionResponse, type JsonObject } from "@litrev/contracts";
import type { HandlerContext } from "@litrev/messaging";
import type { ServiceRuntime } from "@litrev/runtime";
import type { z } from "zod";
import { applyConsolidationRules, criterionIds } from "./consolidation";
import type { LiveCriteria } from "./handlers";
import { PROMPTS, type PromptKey } from "./prompts";
import { ConsolidationReply, CriteriaReply, PicosReply, type CriterionDraft } from "./replies";

/** The parts of the service runtime the live answers use. */
export type CriteriaRuntime = Pick<ServiceRuntime, "config" | "llm" | "logger" | "model">;

/** Provider-backed answers for the six endpoints, using the live service configuration. */
export function liveCriteria(runtime: CriteriaRuntime): LiveCriteria {
  async function ask<S extends z.ZodType>(
    key: PromptKey,
    schema: S,
    request: { model: string },
    user: Record<string, unknown>,
    ctx: HandlerContext,
  ): Promise<z.output<S>> {
    const config = runtime.config();
    const prompt = PROMPTS.prompts[key];
    const specDefault = key === "analyzeQuestion" ? DEFAULT_MODEL.criteriaAnalyzeQuestion : DEFAULT_MODEL.criteria;
    const result = await runtime.llm.structured({
      model: runtime.model(request.model, specDefault),
      schema,
      schemaName: prompt.name.replace(/\./g, "_"),
      // Instructions first and the request last: a stable prefix the provider can cache.
      system: PROMPTS.system(key, config),
      user: renderSections(user),
      temperature: config.temperature,
      maxOutputTokens: config.max_output_tokens,
      providerKey: ctx.providerKey,
      // The gateway cancels the request when its client disconnects: stop spending then.
      signal: ctx.signal,
      // A client holds its HTTP request open: a rate limit that does not clear soon is its to retry.
      interactive: true,
    });
    runtime.logger.debug({ prompt: prompt.name, model: result.modelVersion, usage: result.usage }, "provider call");
    return result.data;
  }

  return {
    analyzeQuestion: (req, ctx) =>
      ask("analyzeQuestion", AnalyzeQuestionResponse, req, { "Research question": req.research_question }, ctx),

    async generate(req, ctx) {
      const reply = await ask(
        "generate",
        CriteriaReply,
        req,
        {
          "Criterion type to draft": req.criterion_type,
          "Project description": req.project_description,
          "Research questions": req.research_questions,
          "Additional notes": req.additional_notes ?? "",
          "Existing criteria (do not repeat)": req.existing_criteria,
        },
        ctx,
      );
      const existing = req.existing_criteria.map(criterionText).filter((t): t is string => !!t);
      const drafts = reply.criteria.map((draft) => ({ ...draft, criterion_type: req.criterion_type }));
      return { criteria: dedupe(drafts, existing).map(toCriterion) };
    },

    picos: (req, ctx) =>
      ask(
        "picos",
        PicosReply,
        req,
        { "Project description": req.project_description, "Research questions": req.research_questions },
        ctx,
      ),

    refineContext: (req, ctx) =>
      ask(
        "refineContext",
        RefineContextResponse,
        req,
        { "Project description": req.description, "Research questions": req.research_questions },
        ctx,
      ),

    async refine(req, ctx) {
      const reply = await ask(
        "refine",
        CriteriaReply,
        req,
        {
          "Project description": req.project_description ?? "",
          "Current criteria": req.current_criteria,
          // Conflict records carry paper titles and abstracts: data, never instructions.
          "Conflicts between human reviewers and the AI": dataBlock("conflicts", req.conflicts.map((conflict, i) => ({ id: `c${i + 1}`, conflict }))),
        },
        ctx,
      );
      return { criteria: dedupe(reply.criteria, []).map(toCriterion) };
    },

    async consolidate(req, ctx) {
      const ids = criterionIds(req.criteria);
      const numbered = req.criteria.map((criterion, index) => ({ ...criterion, id: ids[index] }));
      const reply = await ask(
        "consolidate",
        ConsolidationReply,
        req,
        {
          "Project description": req.project_description ?? "",
          "Research questions": req.research_questions,
          "Criteria (refer to them by id)": numbered,
        },
        ctx,
      );
      return applyConsolidationRules(reply, new Set(ids));
    },
  };
}

/** Labelled sections; JSON for structured parts so nothing is lost or ambiguous. */
function renderSections(sections: Record<string, unknown>): string {
  return Object.entries(sections)
    .map(([title, value]) => `## ${title}\n${typeof value === "string" ? value : JSON.stringify(value, null, 1)}`)
    .join("\n\n");
}

function toCriterion(draft: CriterionDraft): CriterionResponse {
  return { ...draft, confidence: Math.min(1, Math.max(0, draft.confidence)) };
}

/** Normalised text, so rewording by case, spacing or punctuation does not escape deduplication. */
export function normaliseCriterion(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

function criterionText(item: JsonObject): string | undefined {
  for (const key of ["text", "name", "value", "criterion"]) {
    const value = item[key];
    if (typeof value === "string" && value.trim()) return value;
  }
  return undefined;
}

/** Drops drafts that repeat an existing criterion or an earlier draft. */
export function dedupe<T extends { text: string }>(drafts: T[], existing: string[]): T[] {
  const seen = new Set(existing.map(normaliseCriterion));
  return drafts.filter((draft) => {
    const key = normaliseCriterion(draft.text);
    if (!key || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
