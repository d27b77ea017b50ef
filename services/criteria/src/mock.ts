import type {
  AnalyzeQuestionRequest,
  AnalyzeQuestionResponse,
  ConsolidateResponse,
  CriteriaListResponse,
  CriterionResponse,
  GenerateCriteriaRequest,
  PicosRequest,
  PicosResponse,
  RefineContextRequest,
  RefineContextResponse,
  RefineCriteriaRequest,
} from "@litrev/contracts";

/**
 * Mock mode: canned, deterministic answers that say they are placeholders. No provider call,
 * no key needed (spec, "Mock mode"); the same request always gives the same answer.
 */
const NOTE = "Placeholder from mock mode: no language model was called.";

export function mockAnalyzeQuestion(_req: AnalyzeQuestionRequest): AnalyzeQuestionResponse {
  return {
    status: "could_improve",
    missing_elements: ["Mock placeholder: population", "Mock placeholder: comparison", "Mock placeholder: outcome"],
    suggestion: `${NOTE} A live analysis would name the missing PICOS elements and suggest a sharper question.`,
  };
}

export function mockGenerate(req: GenerateCriteriaRequest): CriteriaListResponse {
  const type = req.criterion_type;
  const criteria: CriterionResponse[] = (["Population", "Intervention", "Outcome"] as const).map((category) => ({
    category,
    text: `Mock placeholder ${type} criterion for ${category.toLowerCase()}`,
    description: `${NOTE} A live request drafts a real ${type} criterion for the ${category.toLowerCase()}.`,
    criterion_type: type,
    confidence: 0.5,
    rationale: NOTE,
    title_abstract_assessable: true,
  }));
  return { criteria };
}

export function mockPicos(_req: PicosRequest): PicosResponse {
  return {
    elements: {
      population: "Mock placeholder population",
      intervention: "Mock placeholder intervention",
      comparison: "Mock placeholder comparison",
      outcome: "Mock placeholder outcome",
      study_design: "Mock placeholder study design",
    },
    gap_flags: ["Mock mode: these PICOS elements are placeholders; no analysis was performed"],
    contraindications: [],
  };
}

export function mockRefineContext(req: RefineContextRequest): RefineContextResponse {
  return {
    refined_description: req.description,
    refined_research_questions: req.research_questions,
    explanation: `${NOTE} The description and questions are returned unchanged.`,
  };
}

export function mockRefine(req: RefineCriteriaRequest): CriteriaListResponse {
  const criteria = req.current_criteria.map((item, index): CriterionResponse => {
    const text = firstString(item, ["text", "name", "value", "criterion"]) ?? `Criterion ${index + 1}`;
    const kind = firstString(item, ["criterion_type", "type"]);
    return {
      category: firstString(item, ["category"]) ?? "General",
      text,
      description: `${NOTE} The criterion is returned unchanged.`,
      criterion_type: kind === "include" ? "include" : "exclude",
      confidence: 0.5,
      rationale: NOTE,
      title_abstract_assessable: true,
    };
  });
  return { criteria };
}

export function mockConsolidate(): ConsolidateResponse {
  return {
    duplicate_groups: [],
    consolidation_proposals: [],
    warnings: ["Mock mode: no consolidation was performed; this is a placeholder response."],
  };
}

function firstString(item: Record<string, unknown>, keys: string[]): string | undefined {
  for (const key of keys) {
    const value = item[key];
    if (typeof value === "string" && value.trim()) return value;
  }
  return undefined;
}
