import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { forEachLimited } from "./for-each-limited";

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
      // Fails once both slots are busy (p-map would not start the second item after a failure it already saw).
      await delay(1);
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

describe("forEachLimited over a stream", () => {
  /** A stream of `n` numbers that counts how many were pulled and whether it was closed. */
  function counted(n: number) {
    const seen = { pulled: 0, closed: false };
    const source = (async function* () {
      try {
        for (let i = 0; i < n; i++) {
          await delay(0);
          seen.pulled++;
          yield i;
        }
      } finally {
        seen.closed = true;
      }
    })();
    return { seen, source };
  }

  it("pulls the next item only when a slot frees, never ahead of the calls in flight", async () => {
    const { seen, source } = counted(20);
    let active = 0;
    let finished = 0;
    let peak = 0;
    const aheadOfSlots: number[] = [];
    // A call holds its slot until all three are taken (or the stream is drained): that the window
    // fills never depends on timers firing in order, which a busy machine does not keep.
    const windowFull = async () => {
      while (active < 3 && seen.pulled < 20) await delay(1);
    };
    await forEachLimited(source, 3, new AbortController().signal, async (n) => {
      peak = Math.max(peak, ++active);
      // Pulled so far minus finished: the items held by calls; never more than the slots.
      aheadOfSlots.push(seen.pulled - finished);
      await windowFull();
      await delay(n % 4);
      aheadOfSlots.push(seen.pulled - finished);
      finished++;
      active--;
    });
    expect(finished).toBe(20);
    expect(peak).toBe(3);
    expect(Math.max(...aheadOfSlots)).toBeLessThanOrEqual(3);
  });

  it("stops pulling at the first failure, waits for the calls in flight and closes the stream", async () => {
    const { seen, source } = counted(50);
    let settled = 0;
    const run = forEachLimited(source, 2, new AbortController().signal, async (n) => {
      if (n === 3) throw new Error("third");
      await delay(5);
      settled++;
    });
    await expect(run).rejects.toThrow("third");
    const settledAtRejection = settled;
    await delay(20);
    expect(settled).toBe(settledAtRejection);
    expect(seen.pulled).toBeLessThanOrEqual(5);
    expect(seen.closed).toBe(true);
  });

  it("rejects with the signal's reason when aborted mid-stream and pulls nothing more", async () => {
    const { seen, source } = counted(50);
    const abort = new AbortController();
    const run = forEachLimited(source, 2, abort.signal, async (n) => {
      if (n === 4) abort.abort(new Error("cancelled"));
      await delay(1);
    });
    await expect(run).rejects.toThrow("cancelled");
    const pulled = seen.pulled;
    await delay(20);
    expect(seen.pulled).toBe(pulled);
    expect(pulled).toBeLessThanOrEqual(6);
  });
});
