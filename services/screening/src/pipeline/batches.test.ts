import { describe, expect, it } from "vitest";
import { batches, batchesOf } from "./batches";

describe("batches", () => {
  it("cuts [0, n) into consecutive batches", () => {
    expect(batches(5, 2)).toEqual([
      { index: 0, start: 0, end: 2 },
      { index: 1, start: 2, end: 4 },
      { index: 2, start: 4, end: 5 },
    ]);
  });

  it("numbers batches cut from a stream as `batches` does, across chunk edges", async () => {
    const chunks = (async function* () {
      yield [0, 1, 2];
      yield [3];
      yield [4];
    })();
    const out = [];
    for await (const batch of batchesOf(chunks, 2)) out.push(batch);
    expect(out).toEqual([
      { index: 0, start: 0, items: [0, 1] },
      { index: 1, start: 2, items: [2, 3] },
      { index: 2, start: 4, items: [4] },
    ]);
  });
});
