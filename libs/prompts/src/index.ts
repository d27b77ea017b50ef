export { PromptRegistry, promptOverrides } from "./registry";
export type { PromptConfig, PromptDefinition, PromptSpec } from "./registry";
