import { baseModelName, loadModelAliases, resolveModel } from "./models";

/** USD per one million tokens. */
export interface ModelPrice {
  input: number;
  cachedInput: number;
  output: number;
}

/** Prices from the field notes (November 2026); update them when the provider changes its list. */
export const PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  "gpt-5-nano": { input: 0.05, cachedInput: 0.005, output: 0.4 },
  "gpt-5-mini": { input: 0.25, cachedInput: 0.025, output: 2.0 },
  "gpt-4.1": { input: 2.0, cachedInput: 0.5, output: 8.0 },
  "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
});

/**
 * Models we have no price for (self-hosted, new snapshots) are charged at gpt-4.1 rates, the
 * most expensive entry, so that cost estimates and ceilings err high rather than low.
 */
export const FALLBACK_PRICED_MODEL = "gpt-4.1";

export interface PriceLookup extends ModelPrice {
  /** The price-table entry used. */
  model: string;
  /** False when the fallback price was used. */
  known: boolean;
}

const DATE_SUFFIX = /-\d{4}-\d{2}-\d{2}$/;

/** Price for a model, alias or dated snapshot (`gpt-5-nano-2025-08-07` → gpt-5-nano). */
export function priceFor(modelOrAlias: string, aliases: Readonly<Record<string, string>> = loadModelAliases()): PriceLookup {
  const name = baseModelName(resolveModel(modelOrAlias, aliases)).replace(DATE_SUFFIX, "");
  const price = PRICES[name];
  if (price) return { ...price, model: name, known: true };
  return { ...(PRICES[FALLBACK_PRICED_MODEL] as ModelPrice), model: FALLBACK_PRICED_MODEL, known: false };
}

export interface TokenCounts {
  model: string;
  inputTokens: number;
  /** The part of `inputTokens` served from the provider's prompt cache. */
  cachedInputTokens?: number | undefined;
  outputTokens: number;
}

/** Cost in USD; works the same for counted usage and for estimates. */
export function costUsd(counts: TokenCounts, aliases?: Readonly<Record<string, string>>): number {
  const price = priceFor(counts.model, aliases);
  const cached = Math.min(counts.cachedInputTokens ?? 0, counts.inputTokens);
  const uncached = counts.inputTokens - cached;
  return (uncached * price.input + cached * price.cachedInput + counts.outputTokens * price.output) / 1_000_000;
}

/**
 * Rough token count (about four characters per token for English prose), the same rule the
 * fake provider uses; good enough for estimates and rate-limit budgeting, not for billing.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
