import { describe, expect, it } from "vitest";
import { jsonDepthExceeds } from "./json-depth";

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

describe("jsonDepthExceeds", () => {
  it("counts objects and arrays alike, up to and past the limit", () => {
    expect(jsonDepthExceeds(nested(64), 64)).toBe(false);
    expect(jsonDepthExceeds(nested(65), 64)).toBe(true);
    expect(jsonDepthExceeds('{"a":{"b":[{"c":1}]}}', 4)).toBe(false);
    expect(jsonDepthExceeds('{"a":{"b":[{"c":1}]}}', 3)).toBe(true);
  });

  it("measures nesting, not the number of brackets: siblings do not add up", () => {
    const wide = JSON.stringify({ papers: Array.from({ length: 10_000 }, (_, i) => ({ id: i, tags: [[1], [2]] })) });
    expect(jsonDepthExceeds(wide, 5)).toBe(false);
    expect(jsonDepthExceeds(wide, 4)).toBe(true);
  });

  it("ignores brackets inside strings, escaped quotes and escaped backslashes included", () => {
    const text = JSON.stringify({ a: "[[[[{{{{", b: 'say \\"[[[[" and \\\\', c: "\\\\\"[[[[" });
    expect(JSON.parse(text)).toBeTruthy();
    expect(jsonDepthExceeds(text, 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify(["x\\", [["y"]]]), 2)).toBe(true);
  });

  it("leaves malformed text to the parser", () => {
    expect(jsonDepthExceeds('{"a": "never closed [[[[[[', 2)).toBe(false);
    expect(jsonDepthExceeds("]]]]", 2)).toBe(false);
  });
});
