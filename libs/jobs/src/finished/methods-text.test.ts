import { describe, expect, it } from "vitest";
import { JobReport, type ReportCertificate } from "@litrev/contracts";
import { completeReport } from "./methods-text";

/**
 * The methods paragraph as a methodologist pastes it: every sentence once, punctuation balanced,
 * the certificate's claim stated once however the certificate words its method.
 */

const STATEMENT = "One-sided: recall of at least 95% with 95% confidence (a lower bound that errs with probability at most 5%).";
// The certificate's method ends with its statement, as libs/evaluation writes it.
const METHOD = `Recall certified on a simple random sample of the job's papers, labelled in the order the service drew it. Included papers kept and missed at each threshold are bounded with exact finite-population (hypergeometric) confidence sequences. ${STATEMENT}`;

const certificate: ReportCertificate = { sample_id: "s1", design: "simple", plan: "anytime", look: "certificate", sample_size: 120, labelled: 120, labelled_included: 14, threshold: 1, recall_lower: 0.957, statement: STATEMENT, method: METHOD, at: "2026-11-25T09:00:00.000Z" };

const written = JobReport.parse({
  title: "Title and abstract screening of 435 papers",
  job_id: "0b0e5f3c-0000-4000-8000-000000000001",
  kind: "screening",
  task: "Title and abstract screening",
  status: "completed",
  tool: { name: "litrev-ai", version: "1.0.0", commit: null },
  model: { requested: "llm-5-nano", resolved: "gpt-5-nano", reported: null, provider: { host: "api.example.org", profile: "openai" } },
  mock: false,
  parameters: { labelling: { temperature: null, max_output_tokens: 4096, reasoning_effort: "minimal" } },
  repetitions: 5,
  threshold: 1,
  decision_rule: "include when at least 1 of 5 votes say include",
  prompts: [],
  outcomes: { items: 435, by_outcome: { include: 40, exclude: 395 }, errors: 0 },
  usage: null,
  estimated_cost_usd: 0.2,
  actual_cost_usd: 0.18,
  created_at: "2026-11-24T10:00:00.000Z",
  completed_at: "2026-11-24T10:20:00.000Z",
  duration_ms: 1_200_000,
  error: null,
  limitations: [],
  asked: { criteria: [{ name: "Population", type: "include", text: "Adults" }], questions: [], fields: null },
  prisma: { records_in: 435, results: 435, included: 40, excluded: 395, errored: 0, without_abstract: 3, exclusion_reasons: {} },
});

const sentences = (text: string) => text.split(/(?<=[.!?}])\s+(?=[A-Z{])/);

describe("the methods paragraph with a recall certificate", () => {
  const paragraph = completeReport(written, certificate).methods_paragraph!;

  it("states the certificate's claim once and repeats no sentence", () => {
    expect(paragraph.split(STATEMENT).length - 1).toBe(1);
    const all = sentences(paragraph);
    expect(all.filter((s, i) => all.indexOf(s) !== i)).toEqual([]);
  });

  it("has balanced brackets and no doubled stops such as `.).`", () => {
    expect(paragraph).not.toMatch(/\.\)\.|\.\.|\s\./);
    let depth = 0;
    for (const char of paragraph) {
      depth += char === "(" ? 1 : char === ")" ? -1 : 0;
      expect(depth).toBeGreaterThanOrEqual(0);
    }
    expect(depth).toBe(0);
  });

  it("reads as it is pasted", async () => {
    await expect(paragraph).toMatchFileSnapshot("__snapshots__/methods-paragraph.txt");
  });
});

describe("the methods paragraph of a job created from an import", () => {
  const imported = JobReport.parse({ ...written, prisma: { ...written.prisma, records_identified: 520, duplicates_removed: 85 } });
  const paragraph = completeReport(imported, null).methods_paragraph!;

  it("opens with PRISMA's identification and duplicate counts, then the records screened", () => {
    expect(paragraph.startsWith("520 records were identified in the imported database exports; 85 duplicates were removed before screening. Titles and abstracts of the remaining 435 records were screened")).toBe(true);
    const all = sentences(paragraph);
    expect(all.filter((s, i) => all.indexOf(s) !== i)).toEqual([]);
    expect(paragraph).not.toMatch(/\.\)\.|\.\.|\s\./);
  });

  it("says so in the checklist's PRISMA row, and the paragraph of a job without the counts is as before", () => {
    const row = completeReport(imported, null).checklist!.find((r) => r.item.startsWith("Numbers of records"))!;
    expect(row.answer).toMatch(/^520 identified, 85 duplicates removed, 435 in,/);
    expect(completeReport(written, null).methods_paragraph).toMatch(/^Titles and abstracts of 435 records were screened/);
  });
});
