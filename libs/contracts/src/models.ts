/** Model identifiers the spec uses as defaults; libs/llm maps them to provider model ids. */
export const MODEL = {
  nano: "llm-5-nano",
  mini: "llm-5-mini",
  large: "llm-4.1",
} as const;

export const DEFAULT_MODEL = {
  screening: MODEL.nano,
  indexerRun: MODEL.mini,
  indexerSuggestFields: MODEL.large,
  criteriaAnalyzeQuestion: MODEL.mini,
  criteria: MODEL.large,
} as const;
