import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "../../scripts/lib/launch";

/** Where the browser tests save their screenshots. */
export const CONSOLE_ARTIFACTS = join(ROOT, "test-artifacts", "console");

/** Flags for a closed network: without the background-networking ones Chromium keeps trying to reach the outside. */
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

/** Debian's Chromium (scripts/ensure-chromium.sh installs it when missing), or why there is none. */
export function findChromium(): { path: string } | { reason: string } {
  const result = spawnSync("bash", [join(ROOT, "scripts/ensure-chromium.sh")], { encoding: "utf8", timeout: 900_000 });
  const path = result.stdout.trim().split("\n").at(-1) ?? "";
  if (result.status === 0 && path) return { path };
  return { reason: result.stderr.trim().split("\n").at(-1) || `scripts/ensure-chromium.sh exited ${result.status}` };
}
