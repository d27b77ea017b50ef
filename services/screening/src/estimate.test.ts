import { describe, expect, it } from "vitest";
import { screeningEstimateTokens } from "@litrev/contracts";
import { costUsd, loadModelAliases } from "@litrev/llm";
import { PAPER_TOKENS, estimateScreening, screeningTokens } from "./estimate";

const aliases = loadModelAliases({});
const request = { papers_count: 500, repetitions: 5, criteria_count: 3, model: "llm-5-nano" };

describe("the screening estimate follows the provider's handling of n", () => {
  it("is the spec's formula where the provider honours n", () => {
    expect(screeningTokens(500, 5, 3)).toEqual(screeningEstimateTokens(500, 5, 3));
    expect(screeningTokens(500, 5, 3, { ignoresN: false })).toEqual({ input: (200 + 30 * 3) * 500 * 5 + 300 * 500, output: 10 * 500 * 5 + 100 * 500 });
  });

  it("bills the paper again for every further vote where the provider ignores n; output is unchanged", () => {
    const honoured = screeningTokens(500, 5, 3);
    const ignored = screeningTokens(500, 5, 3, { ignoresN: true });
    expect(ignored.input - honoured.input).toBe(PAPER_TOKENS * 500 * 4);
    expect(ignored.output).toBe(honoured.output);
    // One vote is one request either way.
    expect(screeningTokens(500, 1, 3, { ignoresN: true })).toEqual(screeningTokens(500, 1, 3));
  });

  it("answers the spec's formula in estimated_* whatever the provider does, and its forecast of the bill in forecast_*", () => {
    const ignored = estimateScreening(request, aliases, { ignoresN: true });
    const honoured = estimateScreening(request, aliases);
    const { forecast_input_tokens: _i, forecast_output_tokens: _o, forecast_cost_usd: _c, forecast_provider_n: _n, ...specIgnored } = ignored;
    const { forecast_input_tokens: _hi, forecast_output_tokens: _ho, forecast_cost_usd: _hc, forecast_provider_n: _hn, ...specHonoured } = honoured;
    expect(specIgnored).toEqual(specHonoured);
    expect(ignored.estimated_input_tokens).toBe(screeningEstimateTokens(500, 5, 3).input);
    expect(ignored.forecast_provider_n).toBe("ignored");
    expect(honoured.forecast_provider_n).toBe("honoured");
    expect(ignored.forecast_input_tokens).toBe(screeningTokens(500, 5, 3, { ignoresN: true }).input);
    expect(ignored.forecast_cost_usd).toBeCloseTo(
      costUsd({ model: "llm-5-nano", inputTokens: ignored.forecast_input_tokens!, outputTokens: ignored.forecast_output_tokens! }, aliases),
      6,
    );
    expect(ignored.forecast_cost_usd).toBeGreaterThan(ignored.estimated_cost_usd);
  });
});
