import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { JOB_SERVICES } from "@litrev/contracts";
import { root } from "./import-graph";

/**
 * A job kind is one declaration (libs/contracts, docs/jobs.md): every other per-kind list is derived
 * from the registry. These find the lists written by hand, so that a new kind cannot be forgotten in
 * one of them: a list naming both kinds, or a branch on one kind's name, in the product code outside
 * the contracts and the two kinds' own services.
 */

const KIND = "(screening|indexer)";
const Q = "[\"'`]";
const PATTERNS = [
  // "screening", "indexer" · "screening" | "indexer" · (screening|indexer) · [screening, indexer]
  `${KIND}${Q}?\\s*(,|\\|)\\s*${Q}?${KIND}\\b`,
  // kind === "screening" · "indexer" !== service
  `[=!]==?\\s*${Q}${KIND}${Q}`,
  `${Q}${KIND}${Q}\\s*[=!]==?`,
];

/** Where a kind's name may be written: its declaration, its service, and what is not product code. */
const ALLOWED = [
  ":!libs/contracts",
  ":!services/screening",
  ":!services/indexer",
  ":!*.test.ts",
  ":!*.contract.ts",
  ":!**/testing/**",
  // The console's screens are per kind by design; its list of kinds is checked below.
  ":!services/gateway/console",
];

/** Comment lines: prose may name both kinds. */
const COMMENT = /^\S+:\d+:\s*(\/\/|\*|\/\*|#)/;

function handWritten(paths: string[], patterns = PATTERNS): string[] {
  const args = ["grep", "-n", "-I", "-E", ...patterns.flatMap((p) => ["-e", p]), "--", ...paths, ...(paths.some((p) => p.startsWith("services/gateway/console")) ? [] : ALLOWED)];
  try {
    return execFileSync("git", args, { cwd: root, encoding: "utf8" })
      .split("\n")
      .filter((line) => line && !COMMENT.test(line));
  } catch (error) {
    if ((error as { status?: number }).status === 1) return []; // git grep found nothing
    throw error;
  }
}

describe("per-kind lists are derived, not written", () => {
  it("no hand-written list of the job kinds, nor a branch on a kind's name, in libs/, services/ or scripts/", () => {
    expect(handWritten(["libs", "services", "scripts"])).toEqual([]);
  });

  // Its screens show each kind's own results (a paper browser, extracted records), so the console may
  // branch on a kind; the list of kinds it reads from the gateway (/console/kinds.js, derived).
  it("no hand-written list of the job kinds in the console", () => {
    expect(handWritten(["services/gateway/console"], PATTERNS.slice(0, 1))).toEqual([]);
  });

  it("the guard finds what it is for (a planted list and a planted branch)", () => {
    const lines = ['const KINDS = ["screening", "indexer"];', 'if (kind === "screening") return;', "// screening, indexer: prose"];
    const found = lines.filter((line) => PATTERNS.some((p) => new RegExp(p).test(line)) && !COMMENT.test(`f.ts:1:${line}`));
    expect(found).toEqual(lines.slice(0, 2));
  });

  // Manifests are not generated from the registry: each list in them must be the registry's kinds.
  it("the deploy manifests' per-kind lists are the registry's kinds", () => {
    const policies = readFileSync(join(root, "deploy/k8s/base/network-policies.yaml"), "utf8");
    const lists = [...policies.matchAll(/values: \[([^\]]*)\]/g)].map((m) => (m[1] ?? "").split(",").map((s) => s.trim()));
    expect(lists).toContainEqual(["gateway", "criteria", ...JOB_SERVICES]);
    expect(lists).toContainEqual(JOB_SERVICES);
    expect(lists).toContainEqual(["criteria", ...JOB_SERVICES]);
    const mongoPolicy = readFileSync(join(root, "deploy/k8s/mongodb/network-policies.yaml"), "utf8");
    expect(/values: \[([^\]]*)\]/.exec(mongoPolicy)?.[1]?.split(", ")).toEqual([...JOB_SERVICES, "mongo", "mongo-init"]);
    const mongo = readFileSync(join(root, "deploy/k8s/mongodb/init-replica-set.js"), "utf8");
    expect(/for \(const service of \[([^\]]*)\]\)/.exec(mongo)?.[1]?.replace(/"/g, "").split(", ")).toEqual(JOB_SERVICES);
  });
});
