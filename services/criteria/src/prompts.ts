import { PromptRegistry } from "@litrev/prompts";

/**
 * The criteria service's prompts, in the shared registry (libs/prompts): `system_prompt` set
 * through PUT /v1/config/services/criteria replaces the shared preamble for every endpoint, and
 * `extra.prompts["criteria.<name>"]` replaces one endpoint's instructions.
 */
export const PREAMBLE =
  "You are an expert methodologist for systematic literature reviews (Cochrane, PRISMA). " +
  "You help review teams turn research questions into precise, checkable eligibility criteria. " +
  "Be specific, avoid jargon a screener could misread, and never invent facts about studies.";

const prompt = (name: string, description: string, instructions: string) => ({ name, description, instructions });

export const PROMPTS = new PromptRegistry("criteria", PREAMBLE, {
  analyzeQuestion: prompt(
    "question_analysis",
    "Checks whether a research question is specific enough to start a literature search",
    "Assess the research question against PICOS (population, intervention or exposure, comparison, outcome, study design). " +
      "Answer status 'ready' only when population, intervention/exposure and outcome are all identifiable. " +
      "List each missing or vague element in missing_elements, and give one concrete suggestion that would fix them.",
  ),
  generate: prompt(
    "generation",
    "Drafts inclusion or exclusion criteria from a project description",
    "Draft eligibility criteria of the requested type. One idea per criterion; group them by PICOS category. " +
      "Do not repeat any existing criterion, even reworded. Mark title_abstract_assessable true only when a screener " +
      "could decide it from a title and abstract alone. Give a confidence between 0 and 1 and a short rationale.",
  ),
  picos: prompt(
    "picos",
    "Extracts PICOS elements, flags gaps and contraindications",
    "Extract the population, intervention, comparison, outcome and study design from the project description. " +
      "Use an empty string for an element the description does not state, and add a gap flag that names it. " +
      "List contraindications: combinations of elements that conflict or would make the review infeasible.",
  ),
  refineContext: prompt(
    "context_refinement",
    "Rewrites a project description and research questions to be search-ready",
    "Rewrite the project description and research questions so that they are precise and searchable, keeping the " +
      "authors' intent. Explain briefly what you changed and why.",
  ),
  refine: prompt(
    "refinement",
    "Revises criteria using disagreements between human reviewers and the AI",
    "Revise the current criteria so that the disagreements in the conflict records would be decided the way the human " +
      "reviewers decided them. Keep criteria that worked unchanged; make the others more precise.",
  ),
  consolidate: prompt(
    "consolidation",
    "Finds duplicate or overlapping criteria and proposes merges",
    "Find criteria that are exact or semantic duplicates, or that overlap enough to merge. Refer to criteria only by " +
      "their ids. For each group give the recommended primary id and your confidence between 0 and 1. Propose merged " +
      "criteria with labels of at most 10 words.",
  ),
});

export type PromptKey = keyof typeof PROMPTS.prompts;

export const PROMPT_LIST = PROMPTS.list();
