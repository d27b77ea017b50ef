import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/launch";
import { CLIENT_DIR, renderClientFiles } from "../../scripts/lib/client-files";
import { startStack, type Stack } from "../support/stack";

/**
 * The document a running gateway serves, as a client team would take it: it passes Redocly's
 * recommended rules (redocly.yaml) with no problem at all, and the checked-in TypeScript client
 * (clients/typescript) is exactly what the generator makes of it.
 */

const run = promisify(execFile);
const REDOCLY = join(ROOT, "node_modules/@redocly/cli/bin/cli.js");

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
}

describe("the live OpenAPI document", () => {
  let stack: Stack;
  let document: Record<string, unknown>;
  const dir = mkdtempSync(join(tmpdir(), "litrev-openapi-"));

  beforeAll(async () => {
    stack = await startStack({ services: {} });
    const res = await stack.http("GET", "/openapi.json");
    expect(res.status).toBe(200);
    document = res.body;
  });
  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("passes Redocly's recommended rules with zero errors and zero warnings", async () => {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(document));
    // No telemetry and no update check: the linter runs without any network.
    const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", CI: "true" };
    const { stdout } = await run(process.execPath, [REDOCLY, "lint", "--config", join(ROOT, "redocly.yaml"), "--format=json", file], {
      cwd: ROOT,
      env,
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    const report = JSON.parse(stdout) as LintReport;
    const problems = report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).toEqual([]);
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  });

  it("is what the checked-in client was generated from (run `pnpm generate:client` after a contract change)", async () => {
    const files = await renderClientFiles(document);
    for (const [name, contents] of Object.entries(files)) {
      const checkedIn = readFileSync(join(ROOT, CLIENT_DIR, name), "utf8");
      expect(checkedIn === contents, `${CLIENT_DIR}/${name} is stale: run \`pnpm generate:client\``).toBe(true);
    }
  });
});
