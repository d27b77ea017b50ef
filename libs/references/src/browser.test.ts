import { resolve } from "node:path";
import vm from "node:vm";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

/**
 * The import runs in a browser (the console parses a reviewer's files client-side): the library
 * bundles for the browser platform with no Node built-in, and the bundle imports references in a
 * context that has none of Node's globals, only what a browser has.
 */
describe("@litrev/references in a browser", () => {
  it("bundles without Node's built-ins and imports RIS, NBIB and CSV", async () => {
    const out = await build({
      entryPoints: [resolve(import.meta.dirname, "index.ts")],
      bundle: true,
      platform: "browser",
      format: "iife",
      globalName: "references",
      write: false,
      logLevel: "silent",
      alias: { "node-fetch": resolve(import.meta.dirname, "browser-fetch.ts") },
    });
    const context = vm.createContext({ TextDecoder, TextEncoder, fetch, Headers });
    vm.runInContext(out.outputFiles[0]!.text, context);
    const { importReferences } = context.references as typeof import("./index");
    const result = importReferences([
      { name: "a.ris", text: "\uFEFFTY  - JOUR\r\nT1  - Nudging physicians to prescribe generics\r\nN2  - Wrapped\r\nabstract.\r\nER  - \r\n" },
      { name: "b.nbib", text: "PMID- 555\nTI  - Nudging physicians to prescribe generics.\n" },
      { name: "c.csv", text: "title;abstract\nAnother;One\n" },
    ]);
    expect(result.records.map((r) => [r.id, r.title, r.abstract])).toEqual([
      ["a-1", "Nudging physicians to prescribe generics", "Wrapped abstract."],
      ["555", "Nudging physicians to prescribe generics.", ""],
      ["c-1", "Another", "One"],
    ]);
    expect(result.duplicates).toHaveLength(1);
  });
});
