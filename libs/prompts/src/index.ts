export { PromptRegistry, promptOverrides, promptUse } from "./registry";
export type { PromptConfig, PromptDefinition, PromptSpec } from "./registry";
export { DATA_RULE, dataBlock, matchById, neutraliseMarkers } from "@litrev/contracts";
