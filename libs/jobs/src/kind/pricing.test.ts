import { describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { PRICES } from "@litrev/llm";
import { JobPricing } from "./pricing";

describe("JobPricing", () => {
  it("reads the alias table on every lookup: a remap moves price, resolution and ceiling at once", () => {
    let table: Record<string, string> = { house: "gpt-5-nano" };
    const pricing = new JobPricing(() => table);
    expect(pricing.resolve("house")).toBe("gpt-5-nano");
    expect(pricing.price("house")).toMatchObject({ ...PRICES["gpt-5-nano"], known: true });

    table = { house: "gpt-4.1" };
    expect(pricing.table()).toEqual({ house: "gpt-4.1" });
    expect(pricing.resolve("house")).toBe("gpt-4.1");
    expect(pricing.require("house")).toMatchObject({ ...PRICES["gpt-4.1"], known: true });
    expect(pricing.ceiling(2, pricing.require("house"))).toEqual({ usd: 2, price: PRICES["gpt-4.1"] });
  });

  it("an alias remapped to an unpriced model has no price: unknown for a plain lookup, a 400 naming MODEL_PRICES where one is required", () => {
    const pricing = new JobPricing(() => ({ house: "someone-elses-model" }));
    expect(pricing.price("house").known).toBe(false);
    let refused: unknown;
    try {
      pricing.require("house");
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ServiceError);
    expect(refused).toMatchObject({ category: "validation" });
    expect((refused as Error).message).toContain("set MODEL_PRICES");
    expect((refused as Error).message).toContain("'house' (provider model 'someone-elses-model')");
  });
});
