import { describe, expect, it } from "vitest";
import { JsonShape, type JsonShapeLimits } from "./json-scan";

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const ROOMY: JsonShapeLimits = { depth: 1_000, values: 1e9 };

/** The verdict on `text` fed in chunks of `size` bytes (the whole text at once by default). */
function scan(text: string, limits: Partial<JsonShapeLimits>, size = Infinity): { excess: string | null; values: number } {
  const shape = new JsonShape({ ...ROOMY, ...limits });
  const bytes = Buffer.from(text, "utf8");
  let excess: string | null = null;
  for (let i = 0; i < bytes.length && !excess; i += Math.min(size, bytes.length)) excess = shape.push(bytes.subarray(i, i + size));
  return { excess, values: shape.values };
}
const depthExceeds = (text: string, depth: number) => scan(text, { depth }).excess === "depth";

describe("JsonShape: depth", () => {
  it("counts objects and arrays alike, up to and past the limit", () => {
    expect(depthExceeds(nested(64), 64)).toBe(false);
    expect(depthExceeds(nested(65), 64)).toBe(true);
    expect(depthExceeds('{"a":{"b":[{"c":1}]}}', 4)).toBe(false);
    expect(depthExceeds('{"a":{"b":[{"c":1}]}}', 3)).toBe(true);
  });

  it("measures nesting, not the number of brackets: siblings do not add up", () => {
    const wide = JSON.stringify({ papers: Array.from({ length: 10_000 }, (_, i) => ({ id: i, tags: [[1], [2]] })) });
    expect(depthExceeds(wide, 5)).toBe(false);
    expect(depthExceeds(wide, 4)).toBe(true);
  });

  it("ignores brackets inside strings, escaped quotes and escaped backslashes included", () => {
    const text = JSON.stringify({ a: "[[[[{{{{", b: 'say \\"[[[[" and \\\\', c: "\\\\\"[[[[" });
    expect(JSON.parse(text)).toBeTruthy();
    expect(depthExceeds(text, 1)).toBe(false);
    expect(depthExceeds(JSON.stringify(["x\\", [["y"]]]), 2)).toBe(true);
  });

  it("leaves malformed text to the parser", () => {
    expect(depthExceeds('{"a": "never closed [[[[[[', 2)).toBe(false);
    expect(depthExceeds("]]]]", 2)).toBe(false);
  });
});

describe("JsonShape: values", () => {
  it("counts every value the parser would build, member names included", () => {
    expect(scan("[]", {}).values).toBe(1);
    expect(scan("[1, 22, -3.5e+2, true, false, null]", {}).values).toBe(7);
    expect(scan('{"a": 1, "b": [ "x" , {}], "c":null}', {}).values).toBe(9);
    expect(scan(`{"papers":[],"x":[${Array(1000).fill("[]").join(",")}]}`, {}).values).toBe(1 + 2 + 2 + 1000);
    // Strings count once whatever they hold; multi-byte characters are never taken for structure.
    expect(scan(JSON.stringify({ t: 'é 世界 😀 [1,2] {"a":1} \\ "' }), {}).values).toBe(3);
  });

  it("refuses past the limit, not at it", () => {
    const arrays = (n: number) => `[${Array(n - 1).fill("[]").join(",")}]`;
    expect(scan(arrays(100), { values: 100 }).excess).toBeNull();
    expect(scan(arrays(101), { values: 100 })).toMatchObject({ excess: "values" });
  });

  it("gives the same answer however the bytes are split, escapes and multi-byte characters cut in two", () => {
    const text = JSON.stringify({ a: ["x\\", 'q"[', "é😀", 12_345, true, { b: [null, [[]]] }], c: "\\\\\\\"{" });
    const whole = scan(text, {});
    expect(whole.values).toBe(16);
    for (const size of [1, 2, 3, 5, 7]) expect(scan(text, {}, size)).toEqual(whole);
    expect(scan(text, { depth: 6 }, 1).excess).toBeNull();
    expect(scan(text, { depth: 5 }, 1).excess).toBe("depth");
  });

  it("refuses a huge body of tiny values within its first chunks", () => {
    const shape = new JsonShape({ depth: 64, values: 1_000_000 });
    const chunk = Buffer.from("[],".repeat(64 * 1024 / 3));
    let chunks = 0;
    while (shape.push(chunk) === null) chunks++;
    // 1,000,000 values of 3 bytes: refused after about 3 MB, whatever follows.
    expect(chunks * chunk.length).toBeLessThan(3_100_000);
    expect(shape.values).toBeGreaterThan(1_000_000);
  });

  it("counts what JSON.parse builds, for generated texts full of escapes, split anywhere", () => {
    /** Values JSON.parse builds for `value`, member names included: the reference. */
    const built = (value: unknown): number =>
      1 + (Array.isArray(value) ? value.reduce((n: number, v) => n + built(v), 0) : value && typeof value === "object" ? Object.values(value).reduce((n: number, v) => n + 1 + built(v), 0) : 0);
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    const pieces = ["\\", '"', "[", "]", "{", ":", ",", "é", "😀", "a", "1", " "];
    const text = () => Array.from({ length: random(12) }, () => pieces[random(pieces.length)]).join("");
    const value = (depth: number): unknown => {
      const kind = depth > 4 ? random(4) : random(6);
      if (kind === 0) return text();
      if (kind === 1) return random(2) ? -random(1e6) / 7 : random(100);
      if (kind === 2) return [true, false, null][random(3)];
      if (kind === 3) return random(3) ? text() : "";
      if (kind === 4) return Array.from({ length: random(5) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: random(5) }, () => [text(), value(depth + 1)]));
    };
    for (let round = 0; round < 200; round++) {
      const parsed = value(0);
      const json = JSON.stringify(parsed, null, round % 3 === 0 ? 1 : undefined);
      const expected = built(JSON.parse(json));
      for (const size of [Infinity, 1, 2, 3, 13]) expect(scan(json, {}, size).values, json).toBe(expected);
    }
  });
});
