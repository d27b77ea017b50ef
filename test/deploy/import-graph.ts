import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/**
 * The relative-import graph the architecture tests read: imports as the TypeScript scanner lists
 * them (type-only ones included; it reads the console's ES modules as well), resolved the way the
 * sources write them (`./x` to `x.ts` or `x/index.ts`, `./x.js` as written).
 */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The non-test sources under `dir` whose names end with `ext`. */
export function sources(dir: string, ext = ".ts", out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules") continue;
    if (statSync(path).isDirectory()) sources(path, ext, out);
    else if (name.endsWith(ext) && !name.endsWith(`.test${ext}`) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

export function importGraph(files: readonly string[]): Map<string, string[]> {
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

/** Every module reachable from `entry` (itself included), as paths from the repository root. */
export function reachable(graph: Map<string, string[]>, entry: string): string[] {
  const seen = new Set([entry]);
  for (const v of seen) for (const w of graph.get(v) ?? []) seen.add(w);
  return [...seen].map((m) => relative(root, m));
}

/** The graph's cycles as strongly connected components of more than one module (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
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
