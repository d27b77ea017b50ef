import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CLIENT_DIR, renderClientFiles } from "./lib/client-files";
import { offlineOpenApiDocument } from "./lib/openapi-document";

/**
 * Regenerates the TypeScript client (clients/typescript) from the gateway's OpenAPI document.
 *
 *   npm run generate:client                     # from the gateway's routes, no server needed
 *   npm run generate:client -- --from <url>     # from a running gateway's /openapi.json (sends API_KEY if set)
 *   npm run generate:client -- --check          # exit 1 when the checked-in files are stale
 */
const args = process.argv.slice(2);
const check = args.includes("--check");
const fromIndex = args.indexOf("--from");
const from = fromIndex >= 0 ? args[fromIndex + 1] : undefined;

async function fetchDocument(url: string): Promise<Record<string, unknown>> {
  // A deployment keeps its docs behind the service key (DOCS_PUBLIC): send API_KEY when it is set.
  const headers: Record<string, string> = process.env.API_KEY ? { "x-api-key": process.env.API_KEY } : {};
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

const root = join(import.meta.dirname, "..");
const document = from ? await fetchDocument(from) : await offlineOpenApiDocument();
const files = await renderClientFiles(document);
const stale: string[] = [];
for (const [name, contents] of Object.entries(files)) {
  const path = join(root, CLIENT_DIR, name);
  const current = await readFile(path, "utf8").catch(() => "");
  if (current === contents) continue;
  stale.push(join(CLIENT_DIR, name));
  if (!check) await writeFile(path, contents);
}
if (check && stale.length > 0) {
  console.error(`Stale client files (run \`npm run generate:client\`): ${stale.join(", ")}`);
  process.exit(1);
}
console.log(stale.length === 0 ? "client is up to date" : `${check ? "stale" : "wrote"}: ${stale.join(", ")}`);
