/** `npm run import -- FILE... [options]`: reference exports into paper records as JSON Lines (scripts/lib/import-command.ts, docs/import.md). */
import { runImport } from "./lib/import-command";

try {
  process.exitCode = runImport(process.argv.slice(2), { stdout: (text) => process.stdout.write(text), stderr: (line) => console.error(line) });
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
