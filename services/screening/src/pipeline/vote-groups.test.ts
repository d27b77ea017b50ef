import { describe, expect, it } from "vitest";
import { voteGroups, votePool } from "./vote-groups";

describe("batch-mates per vote", () => {
  it("picks the smallest prime at least the repetitions and the call size", () => {
    expect(votePool(5, 5)).toBe(5);
    expect(votePool(3, 4)).toBe(5);
    expect(votePool(5, 10)).toBe(11);
    expect(votePool(1, 1)).toBe(2);
  });

  for (const [repetitions, callSize, count] of [
    [5, 5, 25],
    [3, 4, 17],
    [7, 10, 110],
    [20, 5, 60],
  ] as const) {
    it(`puts two papers in one call in at most one vote, calls never over the call size (R=${repetitions}, ${callSize} a call, ${count} papers)`, () => {
      const pool = votePool(repetitions, callSize);
      const together = new Map<string, number>();
      for (let vote = 0; vote < repetitions; vote++) {
        const groups = voteGroups(count, callSize, pool, vote);
        expect(groups.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: count }, (_, i) => i));
        for (const group of groups) {
          expect(group.length).toBeLessThanOrEqual(callSize);
          for (const a of group) for (const b of group) if (a < b) together.set(`${a},${b}`, (together.get(`${a},${b}`) ?? 0) + 1);
        }
      }
      expect(Math.max(...together.values())).toBe(1);
    });
  }
});
