import { describe, expect, it } from "vitest";
import { screeningEstimateTokens } from "@litrev/contracts";
import { costUsd, loadModelAliases } from "@litrev/llm";
import { estimateScreening, forecastTokens } from "./estimate";

const aliases = loadModelAliases({});
const request = { papers_count: 500, repetitions: 5, criteria_count: 3, model: "llm-5-nano" };

describe("the screening estimate and forecast", () => {
  it("forecasts labelling input once a paper where the provider honours n, once a vote where it ignores n; output the same", () => {
    const honoured = forecastTokens(500, 5, 4);
    const ignored = forecastTokens(500, 5, 4, { ignoresN: true });
    expect(ignored.output).toBe(honoured.output);
    // The four further passes of labelling input, at the measured tokens a paper.
    expect(ignored.input - honoured.input).toBe(500 * 4 * (440 + 49));
    // One vote is one request either way.
    expect(forecastTokens(500, 1, 4, { ignoresN: true })).toEqual(forecastTokens(500, 1, 4));
    // More criteria, more tokens; no papers, none.
    expect(forecastTokens(500, 5, 8).input).toBeGreaterThan(honoured.input);
    expect(forecastTokens(0, 5, 4)).toEqual({ input: 0, output: 0 });
  });

  it("answers the spec's formula in estimated_* whatever the provider does, and its forecast of the bill in forecast_*", () => {
    const ignored = estimateScreening(request, aliases, { ignoresN: true });
    const honoured = estimateScreening(request, aliases);
    const { forecast_input_tokens: _i, forecast_output_tokens: _o, forecast_cost_usd: _c, forecast_provider_n: _n, ...specIgnored } = ignored;
    const { forecast_input_tokens: _hi, forecast_output_tokens: _ho, forecast_cost_usd: _hc, forecast_provider_n: _hn, ...specHonoured } = honoured;
    expect(specIgnored).toEqual(specHonoured);
    const spec = screeningEstimateTokens(500, 5, 3);
    expect([ignored.estimated_input_tokens, ignored.estimated_output_tokens]).toEqual([spec.input, spec.output]);
    expect(ignored.estimated_cost_usd).toBeCloseTo(costUsd({ model: "llm-5-nano", inputTokens: spec.input, outputTokens: spec.output }, aliases), 6);
    expect([ignored.forecast_provider_n, honoured.forecast_provider_n]).toEqual(["ignored", "honoured"]);
    expect(ignored.forecast_input_tokens).toBe(forecastTokens(500, 5, 3, { ignoresN: true }).input);
    expect(ignored.forecast_cost_usd).toBeCloseTo(
      costUsd({ model: "llm-5-nano", inputTokens: ignored.forecast_input_tokens!, outputTokens: ignored.forecast_output_tokens! }, aliases),
      6,
    );
    expect(ignored.forecast_cost_usd).toBeGreaterThan(honoured.forecast_cost_usd!);
  });
});
