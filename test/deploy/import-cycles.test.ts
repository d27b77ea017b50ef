import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { cycles, importGraph, root, sources } from "./import-graph";

/**
 * No module of libs/ or services/ imports itself back, not even through a type: a cycle ties files
 * that could change apart (the gateway's routes to the app that registers them, a worker's run to
 * the worker), and bundlers and test runners load cycles in surprising orders. Relative imports of
 * the non-test sources, type-only ones included, as the TypeScript scanner lists them. The
 * console's browser modules (plain ES modules, served as they are) are held to the same rule, and
 * import one way: console.js (sign-in, routing) → `screen-*.js` → `component-*.js` (which may use
 * each other) → dom.js and api.js, which import nothing.
 */
const CONSOLE = join(root, "services/gateway/console");
const consoleLayer = (file: string) => {
  const name = basename(file);
  return name === "console.js" ? 3 : name.startsWith("screen-") ? 2 : name.startsWith("component-") ? 1 : 0;
};
/** Imports of the console that go the wrong way: up a layer, or across one other than the components'. */
const wrongWay = (graph: Map<string, string[]>) =>
  [...graph].flatMap(([from, targets]) =>
    targets.filter((to) => consoleLayer(to) > consoleLayer(from) || (consoleLayer(to) === consoleLayer(from) && consoleLayer(from) !== 1)).map((to) => `${basename(from)} → ${basename(to)}`),
  );

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

  it("no module of the console imports itself back, imports go one way, and none is over 400 lines", () => {
    const files = sources(CONSOLE, ".js");
    expect(files.length).toBeGreaterThan(10);
    const graph = importGraph(files);
    expect(cycles(graph)).toEqual([]);
    expect(wrongWay(graph)).toEqual([]);
    expect(files.filter((file) => readFileSync(file, "utf8").split("\n").length > 400).map((file) => basename(file))).toEqual([]);
    const names = (...list: string[]) => list.map((name) => join(CONSOLE, name));
    const [main, screen, component, other, dom] = names("console.js", "screen-a.js", "component-a.js", "component-b.js", "dom.js");
    const bad = new Map([[main!, [screen!]], [screen!, [component!, names("screen-b.js")[0]!]], [component!, [other!, main!]], [dom!, names("api.js")]]);
    expect(wrongWay(bad)).toEqual(["screen-a.js → screen-b.js", "component-a.js → console.js", "dom.js → api.js"]);
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
