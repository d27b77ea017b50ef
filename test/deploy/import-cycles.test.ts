import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { cycles, importGraph, root, sources } from "./import-graph";

/**
 * No module of libs/ or services/ imports itself back, not even through a type: a cycle ties files
 * that could change apart (the gateway's routes to the app that registers them, a worker's run to
 * the worker), and bundlers and test runners load cycles in surprising orders. Relative imports of
 * the non-test sources, type-only ones included, as the TypeScript scanner lists them. The
 * console's browser modules (plain ES modules, served as they are) are held to the same rule.
 */
describe("import cycles", () => {
  it("no module of libs/ or services/ imports itself back, types included", () => {
    const files = ["libs", "services"].flatMap((top) =>
      readdirSync(join(root, top)).flatMap((pkg) => {
        const src = join(root, top, pkg, "src");
        return statSync(src, { throwIfNoEntry: false })?.isDirectory() ? sources(src) : [];
      }),
    );
    expect(files.length).toBeGreaterThan(100);
    expect(cycles(importGraph(files))).toEqual([]);
  });

  it("no module of the console imports itself back", () => {
    const files = sources(join(root, "services/gateway/console"), ".js");
    expect(files.length).toBeGreaterThan(2);
    expect(cycles(importGraph(files))).toEqual([]);
  });

  it("the check finds a cycle, type-only imports and ES module lines included", () => {
    const a = join(root, "a.ts");
    const b = join(root, "b.ts");
    const graph = new Map([
      [a, [b]],
      [b, [a]],
    ]);
    expect(cycles(graph)).toEqual([["a.ts", "b.ts"]]);
    expect(ts.preProcessFile('import type { X } from "./b";', true, true).importedFiles.map((i) => i.fileName)).toEqual(["./b"]);
    expect(ts.preProcessFile('import { h } from "./dom.js";\nconst x = 1;', true, true).importedFiles.map((i) => i.fileName)).toEqual(["./dom.js"]);
  });
});
