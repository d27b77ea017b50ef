import { costCeiling, priceFor, requirePrice, resolveModel, type CostCeiling, type PriceLookup } from "@litrev/llm";

/** An alias table read when asked: the provider client's, which `PUT /v1/config/models` changes live. */
export type AliasSource = () => Readonly<Record<string, string>>;

/**
 * Every price a job kind needs, through the live alias table: the estimate route, the admission's
 * estimate and ceiling check, the price pinned into a capped job and the model it is pinned to.
 * One object per service, so no kind can price an alias the way the environment had it at start.
 */
export class JobPricing {
  constructor(private readonly aliases: AliasSource) {}

  /** The table in force now (estimates price through it). */
  table(): Readonly<Record<string, string>> {
    return this.aliases();
  }

  price(model: string): PriceLookup {
    return priceFor(model, this.aliases());
  }

  /** The price, else the 400 naming MODEL_PRICES: no estimate and no ceiling from a guessed price. */
  require(model: string): PriceLookup {
    return requirePrice(model, this.aliases());
  }

  /** What the alias means now: a job is pinned to it (a later remap is for new jobs). */
  resolve(model: string): string {
    return resolveModel(model, this.aliases());
  }

  ceiling(usd: number, price: PriceLookup): CostCeiling {
    return costCeiling(usd, price);
  }
}
