import { describe, expect, it } from "vitest";
import { BENCH_SCENARIOS, certificateRule, errorRates, meetsNominal, naiveRule, trueRecall } from "./error-rates";

/** The audit's Why 4: the bench must tell a valid rule from a permissive one, and no row may pass by declining. */
describe("the validation bench's power", () => {
  const first = BENCH_SCENARIOS[0]!;
  it("puts recall at threshold 2 just below the target and keeps every include at 1", () => {
    for (const sc of BENCH_SCENARIOS) {
      expect(trueRecall(sc.levels, 1)).toBe(1);
      expect(trueRecall(sc.levels, 2)).toBeLessThan(sc.targetRecall);
      // Just below: one include short of the target (a step of 1/K: 0.02 with the 50 includes of the 0.5% job).
      expect(trueRecall(sc.levels, 2)).toBeGreaterThanOrEqual(sc.targetRecall - 0.0201);
    }
  });

  it("fails the naive rule and one twice too permissive, and passes the certificate, on the same runs", () => {
    const RUNS = 1500;
    expect(meetsNominal(errorRates(first, naiveRule(), RUNS), 0.05)).toBe(false);
    expect(meetsNominal(errorRates(first, naiveRule(2), RUNS), 0.05)).toBe(false);
    const ours = errorRates(first, certificateRule, RUNS);
    expect(meetsNominal(ours, 0.05)).toBe(true);
    expect(ours.certified).toBeGreaterThan(RUNS / 2);
  }, 60_000);

  it("counts a rule that never recommends as failing, not as covered", () => {
    const never = { name: "never", answer: () => ({ votes: 0, missedBelowTruth: false }) };
    expect(meetsNominal(errorRates(first, never, 50), 0.05)).toBe(false);
  });
});
