import { describe, expect, it } from "vitest";
import { CostCeilingExceeded, CostMeter } from "./cost-meter";

const price = { input: 1, cachedInput: 0.5, output: 4 };
const usage = (costUsd: number, tokens = 0) => ({ calls: 1, input_tokens: tokens, cached_input_tokens: 0, output_tokens: tokens, cost_usd: costUsd });

describe("CostMeter", () => {
  it("meters nothing for a job without a ceiling", () => {
    const meter = CostMeter.of({});
    meter.add(usage(1_000), () => "never");
    expect(meter.spentUsd).toBe(0);
  });

  it("throws from the call that crosses the ceiling, naming what was spent, the limit and where the run stopped", () => {
    const meter = CostMeter.of({ cost_ceiling: { usd: 0.5, price } });
    meter.add(usage(0.3), () => "during labelling");
    expect(meter.spentUsd).toBeCloseTo(0.3);
    let stopped: unknown;
    try {
      meter.add(usage(0.3), () => "during labelling");
    } catch (error) {
      stopped = error;
    }
    expect(stopped).toBeInstanceOf(CostCeilingExceeded);
    const failure = (stopped as CostCeilingExceeded).failure("2 of 4 papers were labelled. The progress reached is kept.");
    expect(failure).toMatchObject({ category: "validation" });
    expect(failure.message).toBe(
      "Stopped: the provider cost so far ($0.600000, from the tokens the provider reported) exceeded the limit of $0.5 " +
        "(max_estimated_cost_usd) during labelling; 2 of 4 papers were labelled. The progress reached is kept.",
    );
  });

  it("counts restored usage without judging it, then checks once; a reply without a reported cost is priced at admission", () => {
    const meter = CostMeter.of({ cost_ceiling: { usd: 0.001, price } });
    // 300 input + 300 output tokens at $1 / $4 per 1M tokens: $0.0015.
    meter.count(usage(0, 300));
    expect(meter.spentUsd).toBeCloseTo(0.0015);
    expect(() => meter.check(() => "after 1 of 3 records")).toThrow(/cost 0\.0015 over ceiling 0\.001 after 1 of 3 records/);
  });
});
