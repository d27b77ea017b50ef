import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { batches, forEachLimited } from "./pool";

describe("forEachLimited", () => {
  it("runs every item with at most `limit` in flight", async () => {
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    await forEachLimited([1, 2, 3, 4, 5, 6, 7], 3, new AbortController().signal, async (n) => {
      peak = Math.max(peak, ++active);
      await delay(n % 3);
      done.push(n);
      active--;
    });
    expect(peak).toBe(3);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("rejects with the first failure after the calls in flight settle, starting no further item", async () => {
    const started: number[] = [];
    let settled = 0;
    const run = forEachLimited([1, 2, 3, 4, 5, 6], 2, new AbortController().signal, async (n) => {
      started.push(n);
      if (n === 1) throw new Error("first");
      await delay(5);
      settled++;
      if (n === 2) throw new Error("second");
    });
    await expect(run).rejects.toThrow("first");
    expect(started).toEqual([1, 2]);
    expect(settled).toBe(1);
  });

  it("starts nothing more once the signal fires, and rejects with its reason", async () => {
    const abort = new AbortController();
    const started: number[] = [];
    const run = forEachLimited([1, 2, 3, 4], 1, abort.signal, async (n) => {
      started.push(n);
      if (n === 2) abort.abort(new Error("cancelled"));
    });
    await expect(run).rejects.toThrow("cancelled");
    expect(started).toEqual([1, 2]);
  });
});

describe("batches", () => {
  it("cuts [0, n) into consecutive batches", () => {
    expect(batches(5, 2)).toEqual([
      { index: 0, start: 0, end: 2 },
      { index: 1, start: 2, end: 4 },
      { index: 2, start: 4, end: 5 },
    ]);
  });
});
