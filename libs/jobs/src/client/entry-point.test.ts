import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The gateway imports only `@litrev/jobs/client`: that entry point must not reach the worker side
 * or a database driver. Walks the static imports from client/index.ts.
 */
const src = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function reachable(entry: string): { files: string[]; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/^(?:import|export)\s(?!type\b)[^;]*?from\s+"([^"]+)"/gms)) {
      const spec = match[1]!;
      if (spec.startsWith(".")) queue.push(join(dirname(file), spec.endsWith(".ts") ? spec : `${spec}.ts`));
      else packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
    }
  }
  return { files: [...files].map((f) => relative(src, f)), packages };
}

describe("@litrev/jobs/client", () => {
  it("reaches neither the worker side nor a database driver", () => {
    const { files, packages } = reachable(join(src, "client/index.ts"));
    expect(files.length).toBeGreaterThan(5);
    expect(files.filter((f) => f.startsWith("worker/") || f.includes("mongo"))).toEqual([]);
    expect(packages.has("mongodb")).toBe(false);
  });
});
