import { z } from "zod";
import { ServiceError, type LlmUsage } from "@litrev/contracts";
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

/** `MODEL_PRICES`: `{"model": {"input": …, "output": …, "cachedInput"?: …}}`, USD per 1M tokens. */
const ConfiguredPrices = z.record(
  z.string().min(1).max(200),
  z.object({ input: z.number().min(0), output: z.number().min(0), cachedInput: z.number().min(0).optional() }),
);

let cachedPricesValue: string | undefined;
let cachedPrices: Readonly<Record<string, ModelPrice>> = PRICES;

/**
 * The built-in table merged with `MODEL_PRICES` (a JSON object; names lower-cased, as looked up).
 * A model without `cachedInput` is charged its input price for cached tokens. A malformed value
 * throws: a silently ignored price would let an unpriced model run unmetered.
 */
export function loadModelPrices(env: NodeJS.ProcessEnv = process.env): Readonly<Record<string, ModelPrice>> {
  const raw = env.MODEL_PRICES?.trim();
  if (!raw) return PRICES;
  if (raw === cachedPricesValue) return cachedPrices;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('MODEL_PRICES is not valid JSON: expected an object such as {"my-model":{"input":0.1,"output":0.4}}');
  }
  const result = ConfiguredPrices.safeParse(parsed);
  if (!result.success) {
    throw new Error("MODEL_PRICES must map model names to {input, output[, cachedInput]} prices in USD per 1M tokens (numbers ≥ 0)");
  }
  const configured = Object.fromEntries(
    Object.entries(result.data).map(([name, p]) => [name.toLowerCase(), { input: p.input, output: p.output, cachedInput: p.cachedInput ?? p.input }]),
  );
  cachedPricesValue = raw;
  cachedPrices = Object.freeze({ ...PRICES, ...configured });
  return cachedPrices;
}

export interface PriceLookup extends ModelPrice {
  /** The price-table entry used (the provider model name looked up when none matched). */
  model: string;
  /**
   * False when the table has no price for the model. Nothing is guessed: the price is then zero,
   * estimates that need one refuse (`requirePrice`), and a running job's cost meter falls back
   * to the price its model had at admission.
   */
  known: boolean;
}

const DATE_SUFFIX = /-\d{4}-\d{2}-\d{2}$/;
const UNPRICED: ModelPrice = Object.freeze({ input: 0, cachedInput: 0, output: 0 });

/** Price for a model, alias or dated snapshot (`gpt-5-nano-2025-08-07` → gpt-5-nano). */
export function priceFor(modelOrAlias: string, aliases: Readonly<Record<string, string>> = loadModelAliases()): PriceLookup {
  const prices = loadModelPrices();
  const model = resolveModel(modelOrAlias, aliases);
  const resolved = baseModelName(model);
  // The whole name first (MODEL_PRICES may name `Qwen/Qwen2.5-7B-Instruct`), then without a router prefix.
  for (const candidate of new Set([model.toLowerCase(), resolved])) {
    const name = Object.hasOwn(prices, candidate) ? candidate : candidate.replace(DATE_SUFFIX, "");
    const price = Object.hasOwn(prices, name) ? prices[name] : undefined;
    if (price) return { ...price, model: name, known: true };
  }
  return { ...UNPRICED, model: resolved, known: false };
}

/**
 * The price of a model an estimate or a cost ceiling depends on; a 400 naming `MODEL_PRICES`
 * when there is none (a guessed price could let a ceiling understate the cost).
 */
export function requirePrice(modelOrAlias: string, aliases?: Readonly<Record<string, string>>): PriceLookup {
  const price = priceFor(modelOrAlias, aliases);
  if (price.known) return price;
  const named = price.model === modelOrAlias ? `'${modelOrAlias}'` : `'${modelOrAlias}' (provider model '${price.model}')`;
  throw new ServiceError(
    "validation",
    `No price is configured for the model ${named}, so its cost cannot be estimated or capped: ` +
      `set MODEL_PRICES, e.g. {"${price.model}":{"input":0.1,"output":0.4}} (USD per 1M tokens)`,
    { simple: true },
  );
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
  return costAt(priceFor(counts.model, aliases), counts);
}

/** Cost in USD of token counts at a given price. */
export function costAt(price: ModelPrice, counts: Omit<TokenCounts, "model">): number {
  const cached = Math.min(counts.cachedInputTokens ?? 0, counts.inputTokens);
  const uncached = counts.inputTokens - cached;
  return (uncached * price.input + cached * price.cachedInput + counts.outputTokens * price.output) / 1_000_000;
}

/**
 * A job's cost ceiling as admission fixes it into the job's command: `max_estimated_cost_usd` and
 * the price its model had then, which meters a call whose reply could not be priced (an alias
 * remapped to an unpriced model mid-run), so no call of a capped job goes unmetered.
 */
export const CostCeiling = z.object({
  usd: z.number().min(0),
  price: z.object({ input: z.number().min(0), cachedInput: z.number().min(0), output: z.number().min(0) }),
});
export type CostCeiling = z.infer<typeof CostCeiling>;

export function costCeiling(usd: number, price: ModelPrice): CostCeiling {
  return { usd, price: { input: price.input, cachedInput: price.cachedInput, output: price.output } };
}

/** What one call (or a restored checkpoint) adds to a capped job's running cost: its reported cost, else its tokens at the admission price. */
export function meteredCost(ceiling: CostCeiling, usage: LlmUsage): number {
  if (usage.cost_usd > 0) return usage.cost_usd;
  return costAt(ceiling.price, { inputTokens: usage.input_tokens, cachedInputTokens: usage.cached_input_tokens, outputTokens: usage.output_tokens });
}

/**
 * Rough token count (about four characters per token for English prose), the same rule the
 * fake provider uses; good enough for estimates and rate-limit budgeting, not for billing.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
