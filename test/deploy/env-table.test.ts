import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TelemetryEnv } from "@litrev/telemetry/env";
import { CriteriaEnv } from "../../services/criteria/src/env";
import { GatewayEnv } from "../../services/gateway/src/env";
import { IndexerEnv } from "../../services/indexer/src/env";
import { ScreeningEnv } from "../../services/screening/src/env";
import { ROOT } from "./manifests";

/** docs/operations.md's table of environment variables, checked against the zod env schemas. */

const SCHEMAS = { gateway: GatewayEnv, criteria: CriteriaEnv, screening: ScreeningEnv, indexer: IndexerEnv, telemetry: TelemetryEnv };

/**
 * Variables no process schema reads, each with the file that does read it: `npm start`'s launcher
 * and nats-server's configuration. The test checks each file really names its variable.
 */
const READ_ELSEWHERE: Record<string, string> = {
  NATS_PORT: "scripts/stack.ts",
  STACK_DATA_DIR: "scripts/stack.ts",
  STACK_START_TIMEOUT_S: "scripts/lib/start-wait.ts",
  NATS_GATEWAY_PASSWORD: "deploy/nats/auth.conf",
  NATS_CRITERIA_PASSWORD: "deploy/nats/auth.conf",
  NATS_SCREENING_PASSWORD: "deploy/nats/auth.conf",
  NATS_INDEXER_PASSWORD: "deploy/nats/auth.conf",
};

const schemaVariables = new Set(Object.values(SCHEMAS).flatMap((schema) => Object.keys(schema.shape)));

interface Row {
  line: number;
  names: string[];
  /** `MAX_*`: every schema variable with this prefix. */
  prefixes: string[];
}

function variableTable(): Row[] {
  const lines = readFileSync(join(ROOT, "docs/operations.md"), "utf8").split("\n");
  const header = lines.findIndex((l) => /^\| Variable \| Read by \|/.test(l));
  expect(header, "docs/operations.md has a `| Variable | Read by | …` table").toBeGreaterThan(0);
  const rows: Row[] = [];
  for (let i = header + 2; i < lines.length && lines[i]!.startsWith("|"); i++) {
    const first = lines[i]!.split("|")[1] ?? "";
    const tokens = [...first.matchAll(/`([A-Z][A-Z0-9_]*\*?)`/g)].map((m) => m[1]!);
    rows.push({ line: i + 1, names: tokens.filter((t) => !t.endsWith("*")), prefixes: tokens.filter((t) => t.endsWith("*")).map((t) => t.slice(0, -1)) });
  }
  return rows;
}

describe("docs/operations.md's variable table", () => {
  const rows = variableTable();

  it("lists every variable the env schemas read", () => {
    const listed = new Set(rows.flatMap((r) => r.names));
    const prefixes = rows.flatMap((r) => r.prefixes);
    const missing = [...schemaVariables].filter((v) => !listed.has(v) && !prefixes.some((p) => v.startsWith(p)));
    expect(missing).toEqual([]);
  });

  it("names only real variables: read by a schema, or by the file said to read it", () => {
    const unknown = rows.flatMap((r) => r.names.filter((n) => !schemaVariables.has(n) && !READ_ELSEWHERE[n]).map((n) => `${n} (line ${r.line})`));
    expect(unknown).toEqual([]);
    for (const row of rows) for (const p of row.prefixes) expect([...schemaVariables].some((v) => v.startsWith(p)), `${p}* (line ${row.line})`).toBe(true);
    for (const [name, file] of Object.entries(READ_ELSEWHERE)) expect(readFileSync(join(ROOT, file), "utf8"), `${file} reads ${name}`).toContain(name);
  });

  it("has one row per variable", () => {
    const seen = new Map<string, number>();
    const duplicates: string[] = [];
    for (const row of rows)
      for (const name of row.names) {
        if (seen.has(name)) duplicates.push(`${name} (lines ${seen.get(name)} and ${row.line})`);
        else seen.set(name, row.line);
      }
    expect(duplicates).toEqual([]);
  });
});
