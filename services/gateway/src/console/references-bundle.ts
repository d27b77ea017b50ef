import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The bundle's file name beside the compiled gateway (the production build writes it: scripts/lib/build.ts). */
export const REFERENCES_BUNDLE = "references.js";

/** The bundle the production build wrote beside this module, or null (under tsx it is built on first use). */
export function prebuiltReferencesBundle(): Buffer | null {
  const path = join(dirname(fileURLToPath(import.meta.url)), REFERENCES_BUNDLE);
  return existsSync(path) ? readFileSync(path) : null;
}

/**
 * The reference import (@litrev/references, docs/import.md) bundled for the browser, so that the
 * console parses a reviewer's RIS, NBIB and CSV files where they are: the records reach the service
 * only as the job the reviewer starts. Under tsx built with esbuild on the first request and kept in
 * memory (a fresh clone needs no build step); an image serves the one its build wrote, with no
 * esbuild at run time; node-fetch is aliased to the library's browser stand-in because
 * citation-js imports it at load time and never calls it for an import.
 */
export async function buildReferencesBundle(): Promise<string> {
  const { build } = await import("esbuild");
  const require = createRequire(import.meta.url);
  const entry = require.resolve("@litrev/references");
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    write: false,
    logLevel: "silent",
    alias: { "node-fetch": join(dirname(entry), "browser-fetch.ts") },
  });
  return out.outputFiles[0]!.text;
}
