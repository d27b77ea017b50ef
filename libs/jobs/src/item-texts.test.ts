import { describe, expect, it } from "vitest";
import { InputTexts } from "./item-texts";
import type { JsonRecord } from "./store/job-store";

/** The input as chunks of `size`, counting reads. */
function input(papers: JsonRecord[], size: number) {
  const chunks = Array.from({ length: Math.ceil(papers.length / size) }, (_, n) => papers.slice(n * size, (n + 1) * size));
  const reads: number[] = [];
  return { chunks: chunks.length, reads, read: (n: number) => (reads.push(n), Promise.resolve(chunks[n]!)) };
}

const papers = Array.from({ length: 10 }, (_, i) => ({ id: i % 2 ? `p${i}` : i, title: `Title ${i}`, abstract: i === 4 ? "" : `Abstract ${i}` }));

describe("InputTexts", () => {
  it("finds items in the input's order with one forward walk, chunk by chunk", async () => {
    const source = input(papers, 3);
    const texts = new InputTexts("screening", source.chunks, source.read);
    expect(await texts.of([{ id: 0 }, { id: "p1" }])).toEqual([{ title: "Title 0", abstract: "Abstract 0" }, { title: "Title 1", abstract: "Abstract 1" }]);
    // A failed job's items are a subsequence: skipped papers are walked over, not read again.
    expect(await texts.of([{ id: 4 }, { id: "p9" }])).toEqual([{ title: "Title 4", abstract: "" }, { title: "Title 9", abstract: "Abstract 9" }]);
    expect(source.reads).toEqual([0, 1, 2, 3]);
  });

  it("finds an item out of order from the start, and gives an id the input lacks empty texts", async () => {
    const source = input(papers, 4);
    const texts = new InputTexts("screening", source.chunks, source.read);
    expect(await texts.of([{ id: "p7" }, { id: "p3" }, { id: "nope" }, { id: 8 }])).toEqual([
      { title: "Title 7", abstract: "Abstract 7" },
      { title: "Title 3", abstract: "Abstract 3" },
      { title: "", abstract: "" },
      { title: "Title 8", abstract: "Abstract 8" },
    ]);
    // An id 2 and "2" are different papers (ids compare as given).
    expect(await texts.of([{ id: "2" }])).toEqual([{ title: "", abstract: "" }]);
  });

  it("reads the indexer's keys", async () => {
    const source = input([{ ID: "r1", Title: "T", Abstract: "A" }], 5);
    expect(await new InputTexts("indexer", source.chunks, source.read).of([{ ID: "r1", indexing_status: "ok" }])).toEqual([{ title: "T", abstract: "A" }]);
  });
});
