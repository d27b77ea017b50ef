import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOracle, startFakeProvider, type FakeProvider, type Oracle } from "@litrev/llm/testing";
import { loadBuiltIn, loadRecords } from "../../eval/datasets";
import type { ScreeningReport } from "../../eval/report";
import { startStack, TEST_API_KEY, type Stack } from "../support/stack";

/**
 * The evaluation harness end to end: the real gateway and screening worker, the fake provider in
 * oracle mode answering from the Nelson (2002) review's labels with known per-vote error rates, and
 * `pnpm eval screening` run as a client would run it (its own process, HTTP only). The figures it
 * reports must match what the binomial law predicts from the oracle's rates.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const DATASET = "Nelson_2002"; // 366 records, 80 included: the most inclusions of the built-in reviews
const SENSITIVITY = 0.9;
const SPECIFICITY = 0.8;
const R = 3;
/** A semicolon CSV as Excel saves it (libs/references/fixtures), screened in a second run. */
const SEMICOLON_CSV = join(ROOT, "libs/references/fixtures/asreview-semicolon.csv");

let provider: FakeProvider;
let stack: Stack;
let oracle: Oracle;
const out = mkdtempSync(join(tmpdir(), "eval-harness-"));

beforeAll(async () => {
  oracle = createOracle({ records: [...loadBuiltIn(DATASET).records, ...loadRecords(SEMICOLON_CSV)], sensitivity: SENSITIVITY, specificity: SPECIFICITY, seed: 1 });
  provider = await startFakeProvider({ oracle });
  stack = await startStack({ services: { screening: 1 }, env: { OPENAI_API_KEY: "sk-eval-harness", OPENAI_BASE_URL: provider.url } });
});

afterAll(async () => {
  await stack?.stop();
  await provider?.close();
  rmSync(out, { recursive: true, force: true });
});

function runHarness(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "eval/main.ts", ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** P(Binomial(n, p) ≥ k). */
function atLeast(n: number, p: number, k: number): number {
  let total = 0;
  for (let j = k; j <= n; j++) {
    let c = 1;
    for (let i = 1; i <= j; i++) c = (c * (n - i + 1)) / i;
    total += c * p ** j * (1 - p) ** (n - j);
  }
  return total;
}

describe("pnpm eval screening against the fake provider's oracle mode", () => {
  it("reports recall and specificity at every vote threshold as the oracle's rates predict", async () => {
    const run = await runHarness(["screening", "--dataset", DATASET, "--repetitions", String(R), "--out", out], { BASE_URL: stack.baseUrl, API_KEY: TEST_API_KEY });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`${DATASET}: 366 papers, 80 included, ${R} votes`);

    // Every labelling vote came from the oracle: each paper recognised, R votes each.
    expect(oracle.stats()).toEqual({ votes: 366 * R, unknownPapers: 0 });

    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as ScreeningReport;
    expect(report.dataset).toMatchObject({ name: DATASET, records: 366, included: 80 });
    expect(report.service.repetitions).toBe(R);
    expect(report.missing_results).toBe(0);
    // The included studies the screener missed, by id and title, and the records' data quality.
    expect(report.missed_included).toHaveLength(report.at_job_threshold.fn);
    for (const missed of report.missed_included) expect(missed.votes).toBeLessThan(report.service.threshold);
    expect(report.data_quality.records).toBe(366);
    expect(report.data_quality.without_abstract).toBeGreaterThanOrEqual(0);
    expect(report.thresholds.map((row) => row.votes)).toEqual([0, 1, 2, 3]);

    // A threshold's recall is the share of 80 inclusions with at least t include votes, each a
    // Binomial(R, sensitivity) draw; specificity likewise over 286 exclusions. A proportion over n
    // papers has standard deviation √(p(1−p)/n) (0.05 at t = 3 for recall, 0.018 at t = 2 for
    // specificity). 4 SD: a correct harness fails with probability < 1e-4 per figure; a harness
    // off by one threshold misses by 5–20 SD (e.g. recall 0.972 vs 0.729, specificity 0.896 vs 0.512).
    for (const row of report.thresholds) {
      const t = row.votes;
      const recall = atLeast(R, SENSITIVITY, t); // t = 1: 1 − 0.1³ = 0.999
      const specificity = 1 - atLeast(R, 1 - SPECIFICITY, t); // t = 1: 0.8³ = 0.512
      const tolerance = (p: number, n: number) => 4 * Math.sqrt((p * (1 - p)) / n) + 1e-9;
      expect(Math.abs(row.recall! - recall), `recall at ≥${t}: ${row.recall} vs ${recall}`).toBeLessThanOrEqual(tolerance(recall, 80));
      expect(Math.abs(row.specificity! - specificity), `specificity at ≥${t}: ${row.specificity} vs ${specificity}`).toBeLessThanOrEqual(tolerance(specificity, 286));
      // The counts behind the figures are consistent.
      expect(row.tp + row.fn).toBe(80);
      expect(row.fp + row.tn).toBe(286);
      expect(row.workload).toBeCloseTo((row.tp + row.fp) / 366, 12);
    }
    // The job's own threshold (spec default 1.0) is the ≥1 row.
    expect(report.at_job_threshold).toEqual({ ...report.thresholds[1], votes: 1 });
    // At a 95% target the ≥2 threshold is expected (0.972); ≥3 (0.729) cannot reach it.
    expect(report.target.threshold?.votes).toBe(2);
    expect(report.wss_at_95).toBeGreaterThan(0.4);

    const markdown = readFileSync(join(out, "report.md"), "utf8");
    expect(markdown).toContain("| Include at ≥ | Recall | Specificity |");
    expect(markdown).toContain(`### Included studies missed at this threshold (${report.missed_included.length})`);
    for (const missed of report.missed_included.slice(0, 3)) expect(markdown).toContain(`| ${missed.id} |`);
    expect(markdown).toMatch(/## Data quality\n\n\d+ of 366 records/);
    // Tokens once the job reports its usage (issue 19), else the estimate; cost per 1,000 papers either way.
    expect(markdown).toMatch(/(Input tokens|Tokens) per 1,000 papers/);
    expect(markdown).toMatch(/[Cc]ost per 1,000 papers/);
    expect(markdown).toContain("recall-workload.svg");
    // The studies missed at the recommended threshold too, the criteria as sent, and the job's provenance.
    for (const missed of report.target.missed_included) expect(missed.votes).toBeLessThan(report.target.threshold!.votes);
    expect(report.target.missed_included).toHaveLength(report.target.threshold!.fn);
    expect(markdown).toContain(`### Included studies missed at the recommended threshold, ≥ 2 (${report.target.missed_included.length})`);
    expect(markdown).toContain("## Criteria sent");
    expect(markdown).toContain(report.dataset.criteria.criteria[0]!.value.replace(/\s+/g, " ").trim().slice(0, 200));
    const provenance = report.service.provenance!;
    expect(provenance.model_resolved).toBe(report.service.model);
    expect(provenance.prompts.length).toBeGreaterThan(0);
    expect(markdown).toContain(`| Model resolved (every call went to it) | \`${provenance.model_resolved}\` |`);
    for (const prompt of provenance.prompts) expect(markdown).toContain(`\`${prompt.sha256}\``);
    const svg = readFileSync(join(out, "recall-workload.svg"), "utf8");
    expect(svg).toContain("<svg");
    expect(svg).toContain("Share of papers a human still has to read");
    expect(existsSync(join(out, "report.json"))).toBe(true);
  });

  it("screens a semicolon CSV as Excel saves it, with criteria from a file", async () => {
    const criteria = join(out, "criteria.json");
    writeFileSync(criteria, JSON.stringify({ criteria: [{ name: "Nudges", type: "include", value: "Interventions that nudge healthcare professionals" }], questions: ["Do nudges change clinicians' behaviour?"] }));
    const csvOut = join(out, "csv");
    const before = oracle.stats().votes;
    const run = await runHarness(["screening", "--file", SEMICOLON_CSV, "--criteria", criteria, "--repetitions", "2", "--limit", "60", "--out", csvOut], { BASE_URL: stack.baseUrl, API_KEY: TEST_API_KEY });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/204 records from .*asreview-semicolon\.csv \(csv, 204\); 2 duplicates in 2 groups \(kept/);
    expect(oracle.stats()).toEqual({ votes: before + 60 * 2, unknownPapers: 0 });
    const report = JSON.parse(readFileSync(join(csvOut, "report.json"), "utf8")) as ScreeningReport;
    expect(report.dataset).toMatchObject({ name: "asreview-semicolon", records: 60, sampled_from: 204, import: { files: [{ format: "csv", records: 204 }], duplicates: 2 } });
    expect(report.data_quality.duplicates).toEqual({ found: 2, merged: false });
    const markdown = readFileSync(join(csvOut, "report.md"), "utf8");
    expect(markdown).toContain("| 1 | Nudges | include | Interventions that nudge healthcare professionals |");
    expect(markdown).toContain("- Do nudges change clinicians' behaviour?");
  });
});
