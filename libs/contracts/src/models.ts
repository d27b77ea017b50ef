import { ServiceError } from "./errors";

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

/**
 * The models a deployment lets clients name (docs/security.md, "Spending and prompts"): every
 * alias of the live table and the model it points at, plus the names configured in
 * `ALLOWED_MODELS`. Sorted, so the 400 that lists them reads the same on every replica.
 */
export function allowedModels(aliases: Readonly<Record<string, string>>, configured: readonly string[] = []): string[] {
  return [...new Set([...Object.keys(aliases), ...Object.values(aliases), ...configured])].sort();
}

/** Longest list of allowed names a 400 quotes in full (the rest are counted). */
const MAX_NAMED = 30;

/** The 400 for a model outside the allowlist: names what is allowed and how to allow more. */
export function modelNotAllowedMessage(model: string, allowed: readonly string[]): string {
  const shown = allowed.slice(0, MAX_NAMED).join(", ");
  const more = allowed.length > MAX_NAMED ? ` and ${allowed.length - MAX_NAMED} more` : "";
  const quoted = model.length > 100 ? `${model.slice(0, 100)}…` : model;
  return `Model '${quoted}' is not allowed on this deployment; allowed models: ${shown}${more} (aliases from GET /v1/config/models, plus ALLOWED_MODELS)`;
}

/** A 400 with the spec's simple body (`{detail: string}`), like the cost-ceiling 400. */
export function modelNotAllowedError(model: string, allowed: readonly string[]): ServiceError {
  return new ServiceError("validation", modelNotAllowedMessage(model, allowed), { simple: true });
}
