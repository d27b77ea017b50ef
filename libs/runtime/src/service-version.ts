import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The code a job ran on, as its provenance records it. */
export interface ServiceVersion {
  version: string;
  commit: string | null;
}

const COMMIT = /^[0-9a-f]{7,64}$/i;

/**
 * The package version (all workspace packages share one) and the git commit: `SERVICE_COMMIT` when
 * the deployment sets it (an image has no .git), else `git rev-parse HEAD` once at start. Never
 * fails: an unknown commit is null, an unreadable version "unknown".
 */
export function serviceVersion(commitFromEnv: string | undefined): ServiceVersion {
  return { version: packageVersion(), commit: normaliseCommit(commitFromEnv) ?? gitCommit() };
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: unknown };
    return typeof pkg.version === "string" && pkg.version ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}

function gitCommit(): string | null {
  try {
    const out = execFileSync("git", ["rev-parse", "HEAD"], {
      cwd: fileURLToPath(new URL(".", import.meta.url)),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 2_000,
    });
    return normaliseCommit(out);
  } catch {
    return null;
  }
}

function normaliseCommit(value: string | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed && COMMIT.test(trimmed) ? trimmed.toLowerCase() : null;
}
