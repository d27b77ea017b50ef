import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * No module of libs/ or services/ imports itself back, not even through a type: a cycle ties files
 * that could change apart (the gateway's routes to the app that registers them, a worker's run to
 * the worker), and bundlers and test runners load cycles in surprising orders. Relative imports of
 * the non-test sources, type-only ones included, as the TypeScript scanner lists them.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules") continue;
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts") && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith("."))
      .map((name) => resolve(dirname(file), name))
      .map((base) => [`${base}.ts`, join(base, "index.ts"), base].find((c) => known.has(c)))
      .filter((c): c is string => c !== undefined);
    graph.set(file, targets);
  }
  return graph;
}

/** The graph's cycles as strongly connected components of more than one module (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(relative(root, w));
      if (w === v) break;
    }
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

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

  it("the check finds a cycle, type-only imports included", () => {
    const a = join(root, "a.ts");
    const b = join(root, "b.ts");
    const graph = new Map([
      [a, [b]],
      [b, [a]],
    ]);
    expect(cycles(graph)).toEqual([["a.ts", "b.ts"]]);
    expect(ts.preProcessFile('import type { X } from "./b";', true, true).importedFiles.map((i) => i.fileName)).toEqual(["./b"]);
  });
});
