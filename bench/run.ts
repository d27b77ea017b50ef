/**
 * `npm run bench -- <name> [args…]` runs `bench/<name>.ts`; without a name it lists them.
 * Every benchmark prints its own figures and ratios against a baseline measured in the same run.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const available = readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .map((f) => f.replace(/\.ts$/, ""));
const [name, ...args] = process.argv.slice(2);
if (!name || !existsSync(join(here, `${name}.ts`))) {
  console.log(`usage: npm run bench -- <name> [args]\navailable: ${available.join(", ")}`);
  process.exit(name ? 1 : 0);
}
const result = spawnSync(process.execPath, ["--import", "tsx", join(here, `${name}.ts`), ...args], { stdio: "inherit" });
process.exit(result.status ?? 1);
