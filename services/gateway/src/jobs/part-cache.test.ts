import { describe, expect, it } from "vitest";
import { PartCache } from "./part-cache";

const collect = async (parts: AsyncIterable<Uint8Array>) => {
  const out: number[] = [];
  for await (const part of parts) out.push(...part);
  return out;
};

describe("PartCache", () => {
  it("reads each part once for concurrent readers and keeps at most its byte budget", async () => {
    const reads: number[] = [];
    const readPart = async (n: number) => {
      reads.push(n);
      await new Promise((r) => setTimeout(r, 5));
      return Uint8Array.from([n, n, n, n]);
    };
    const cache = new PartCache(10);
    const ref = { name: "body", parts: 5, bytes: 20 };
    const bodies = await Promise.all(Array.from({ length: 8 }, () => collect(cache.stream(ref, readPart))));
    for (const body of bodies) expect(body).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]);
    expect(reads).toEqual([0, 1, 2, 3, 4]);
    expect(cache.bytes).toBeLessThanOrEqual(10);
    // Evicted parts are read again when asked for later.
    await collect(cache.stream(ref, readPart));
    expect(reads.filter((n) => n === 0)).toHaveLength(2);
  });
});
