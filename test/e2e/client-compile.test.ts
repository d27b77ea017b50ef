import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/launch";
import { CLIENT_DIR, renderClientFiles } from "../../scripts/lib/client-files";

/**
 * What a client team does with the published document (issue 21): generate types with
 * openapi-typescript, call the API through openapi-fetch, and let TypeScript check a whole
 * create → poll → list flow against the named resources, down to each result's decision, votes and
 * verdicts. A flow that misuses a field must fail to compile, or the check proves nothing.
 */

const run = promisify(execFile);
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

const FLOW = `
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type Schemas = components["schemas"];

export async function screenAndList(baseUrl: string, apiKey: string) {
  const api = createClient<paths>({ baseUrl, headers: { "X-API-Key": apiKey } });
  const created = await api.POST("/v1/screening/jobs", {
    body: { papers: [{ id: "p1", title: "Reminders", abstract: "A trial." }], criteria: [{ name: "Population", type: "include", value: "GPs" }], mock: true },
  });
  if (!created.data) throw new Error(created.error ? JSON.stringify(created.error) : "no body");
  const jobId: string = created.data.job_id;

  const poll = await api.GET("/v1/screening/jobs/{job_id}", { params: { path: { job_id: jobId } } });
  const job: Schemas["ScreeningResultResponse"] | undefined = poll.data;
  const status: "pending" | "running" | "completed" | "failed" | undefined = job?.status;
  const results: Schemas["ScreeningResult"][] = job?.results ?? [];
  const decisions: ("include" | "exclude")[] = results.map((r) => r.decision);
  const votes: number = results[0]?.votes.filter((v) => v === "include").length ?? 0;
  const verdicts: ("met" | "not_met" | "unclear")[] = results.flatMap((r) => r.criteria_verdicts.map((v) => v.verdict));
  const tallies: number[] = results.flatMap((r) => r.criteria_verdicts.map((v) => v.met + v.not_met + v.unclear));
  const clusters: string[] = (job?.clusters ?? []).map((c) => c.label);

  const listed = await api.GET("/v1/screening/jobs", { params: { query: { limit: 10 } } });
  const papers: number[] = (listed.data ?? []).map((item) => item.papers_count);
  const listedModels: Schemas["ScreeningJobListItem"]["model"][] = (listed.data ?? []).map((item) => item.model);

  const indexer = await api.POST("/v1/indexer/jobs", {
    body: { records: [{ ID: "r1", Title: "T", Abstract: "A" }], fields: [{ name: "design", description: "Study design", data_type_primary: "text" }] },
  });
  const indexerJob = indexer.data ? (await api.GET("/v1/indexer/jobs/{job_id}", { params: { path: { job_id: indexer.data.job_id } } })).data : undefined;
  const progress: number | undefined = (indexerJob satisfies Schemas["IndexerJob"] | undefined)?.progress;
  const indexerJobs: Schemas["IndexerJobListItem"]["record_count"][] = ((await api.GET("/v1/indexer/jobs")).data ?? []).map((j) => j.record_count);
  const field: Schemas["IndexerField"] = { name: "n", description: "d", data_type_primary: "number", data_type_secondary: "count" };
  const context: Schemas["ProjectContext"] = { research_questions: ["Do nudges work?"] };
  const config: Schemas["ServiceConfigResponse"] | undefined = (await api.GET("/v1/config/services/{service_id}", { params: { path: { service_id: "criteria" } } })).data;
  return { status, decisions, votes, verdicts, tallies, clusters, papers, listedModels, progress, indexerJobs, field, context, config };
}
`;

/** A misuse each: a decision no result can have, a field a list item lacks, a verdict count as text. */
const MISUSES = [
  `const r = {} as components["schemas"]["ScreeningResult"]; export const wrong = r.decision === "maybe";`,
  `const item = {} as components["schemas"]["ScreeningJobListItem"]; export const wrong = item.results;`,
  `const v = {} as components["schemas"]["CriterionVerdict"]; export const wrong: string = v.met;`,
];

describe("a client generated with openapi-typescript and called through openapi-fetch", () => {
  // Inside the client package, so `openapi-fetch` resolves as it would in a client's project.
  const dir = mkdtempSync(join(ROOT, CLIENT_DIR, ".compile-check-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const compile = async (files: Record<string, string>) => {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const args = ["--noEmit", "--strict", "--target", "es2022", "--module", "preserve", "--moduleResolution", "bundler", "--skipLibCheck", ...Object.keys(files).filter((f) => f !== "schema.ts").map((f) => join(dir, f))];
    return run(process.execPath, [TSC, ...args], { cwd: dir, timeout: 120_000 }).then(
      () => ({ ok: true, output: "" }),
      (error: { stdout?: string }) => ({ ok: false, output: error.stdout ?? "" }),
    );
  };

  it("compiles a create → poll → list flow against the published document's named types", async () => {
    const document = JSON.parse(readFileSync(join(ROOT, CLIENT_DIR, "openapi.json"), "utf8")) as Record<string, unknown>;
    const schema = (await renderClientFiles(document))["src/schema.ts"]!;
    const flow = await compile({ "schema.ts": schema, "flow.ts": FLOW });
    expect(flow.output).toBe("");
    expect(flow.ok).toBe(true);

    const misuses = await compile(Object.fromEntries(MISUSES.map((body, i) => [`misuse-${i}.ts`, `import type { components } from "./schema";\n${body}\n`])));
    expect(misuses.ok).toBe(false);
    for (let i = 0; i < MISUSES.length; i++) expect(misuses.output, `misuse ${i} compiled`).toContain(`misuse-${i}.ts(`);
  }, 180_000);
});
