import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * The reference import (@litrev/references, docs/import.md) bundled for the browser, so that the
 * console parses a reviewer's RIS, NBIB and CSV files where they are: the records reach the service
 * only as the job the reviewer starts. Built with esbuild on the first request and kept in memory (a
 * fresh clone needs no build step); node-fetch is aliased to the library's browser stand-in because
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
