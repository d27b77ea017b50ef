import { DEFAULT_MODEL } from "./models";

/**
 * Request examples for the OpenAPI document, by operation id. Values are the spec's own defaults
 * (models, repetitions, threshold, mode, workers, batch size, criterion type), written out so a
 * reader of `/docs` sees what the service assumes when a field is omitted. The linter checks each
 * against its schema.
 */
const paper = {
  id: "p1",
  title: "Effect of peer comparison letters on antibiotic prescribing by general practitioners",
  abstract: "A randomised trial in 1,581 practices found that feedback letters reduced prescribing by 3.3%.",
};
const record = { ID: paper.id, Title: paper.title, Abstract: paper.abstract };
const field = { name: "sample_size", description: "Number of participants", data_type_primary: "number", data_type_secondary: "NA" };
const projectContext = {
  description: "Nudges aimed at physicians' prescribing behaviour",
  research_questions: ["Do nudges change prescribing by physicians?"],
};
const criterion = { category: "Population", text: "Physicians", description: "Practising physicians of any specialty", criterion_type: "include" };

export const requestExamples: Readonly<Record<string, unknown>> = {
  updateServiceConfig: { temperature: 0.3 },
  updateModelAliases: { aliases: { "llm-5-nano": "gpt-5-nano" } },

  createScreeningJob: {
    papers: [paper],
    criteria: [{ name: "Population", type: "include", value: "Physicians" }],
    model: DEFAULT_MODEL.screening,
    repetitions: 5,
    threshold: 1.0,
    clusters_type: "include",
    project_id: 42,
    mock: true,
  },
  estimateScreening: { papers_count: 1000, model: DEFAULT_MODEL.screening, repetitions: 5, criteria_count: 0 },

  runIndexer: { records: [record], fields: [field], model: DEFAULT_MODEL.indexerRun, mode: "full", max_workers: 4, batch_size: 50 },
  createIndexerJob: { records: [record], fields: [field], model: DEFAULT_MODEL.indexerRun, project_context: projectContext, mode: "full", project_id: 42 },
  estimateIndexer: { fields: [field], record_count: 1000, model: DEFAULT_MODEL.indexerRun },
  suggestIndexerFields: { project_context: projectContext, existing_fields: ["sample_size"], model: DEFAULT_MODEL.indexerSuggestFields, mock: true },
  refineIndexerFields: { fields: [field], project_context: projectContext, model: DEFAULT_MODEL.indexerSuggestFields },
  groupIndexerTags: { field_name: "setting", values: ["hospital", "primary care", "general practice"], num_groups_hint: 2, model: DEFAULT_MODEL.indexerSuggestFields },

  analyzeResearchQuestion: { research_question: "Do nudges change prescribing by physicians?", model: DEFAULT_MODEL.criteriaAnalyzeQuestion, mock: true },
  generateCriteria: {
    project_description: projectContext.description,
    research_questions: projectContext.research_questions,
    criterion_type: "exclude",
    model: DEFAULT_MODEL.criteria,
    mock: true,
  },
  extractPicos: { project_description: projectContext.description, research_questions: projectContext.research_questions, model: DEFAULT_MODEL.criteria, mock: true },
  refineProjectContext: { description: projectContext.description, research_questions: projectContext.research_questions, model: DEFAULT_MODEL.criteria, mock: true },
  refineCriteria: { current_criteria: [criterion], conflicts: [], project_description: projectContext.description, model: DEFAULT_MODEL.criteria, mock: true },
  consolidateCriteria: { criteria: [criterion, { ...criterion, text: "Doctors" }], project_description: projectContext.description, model: DEFAULT_MODEL.criteria, mock: true },
};
