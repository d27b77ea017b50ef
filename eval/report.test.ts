import { describe, expect, it } from "vitest";
import type { ThresholdRow } from "@litrev/contracts";
import { markdownReport, type ScreeningReport } from "./report";

const row = (votes: number, fn: number): ThresholdRow => ({
  votes,
  tp: 4 - fn,
  fn,
  fp: 3,
  tn: 3,
  recall: (4 - fn) / 4,
  recall_ci: null,
  specificity: 0.5,
  specificity_ci: null,
  precision: null,
  f1: null,
  workload: 0.7,
  work_saved: 0.3,
  wss: 0.1,
});

function report(overrides: Partial<ScreeningReport> = {}): ScreeningReport {
  return {
    kind: "screening-evaluation",
    generated_at: "2026-11-26T13:00:00.000Z",
    dataset: {
      name: "mine",
      source: "/x/mine.ris",
      records: 10,
      included: 4,
      sampled_from: null,
      criteria: {
        criteria: [
          { name: "Population", type: "include", value: "Adults | over 18\nwith asthma" },
          { name: "Design", type: "exclude", value: "Editorials and letters" },
        ],
        questions: ["Does X reduce Y?"],
      },
      import: { files: [{ name: "mine.ris", format: "ris", records: 11 }], duplicates: 1, duplicate_groups: 1, merged: true, included_from: { files: ["/x/included.ris"], studies: 5, matched: 4, unmatched: ["included-5"] } },
    },
    service: {
      base_url: "http://localhost:8000",
      job_id: "j1",
      model: "gpt-5-nano-2025-08-07",
      repetitions: 3,
      threshold: 2,
      duration_ms: 1000,
      stage_timings: {},
      provenance: {
        model_requested: "llm-5-nano",
        model_resolved: "gpt-5-nano-2025-08-07",
        models_used: [{ model: "gpt-5-nano-2025-08-07", calls: 30 }],
        service_version: { version: "0.1.0", commit: "80f5099" },
        provider: { host: "api.openai.com", profile: "openai" },
        parameters: { labelling: { temperature: null, max_output_tokens: 800, reasoning_effort: "minimal" } },
        repetitions: 3,
        threshold: 2,
        decision_rule: "include when at least 2 of 3 votes say include",
        prompts: [{ name: "labelling", template_id: "screening/labelling@1", sha256: "b".repeat(64) }],
      },
    },
    oracle: null,
    at_job_threshold: row(2, 2),
    thresholds: [row(0, 0), row(1, 0), row(2, 2), row(3, 3)],
    wss_at_95: 0.2,
    target: { recall: 0.95, threshold: row(1, 0), missed_included: [] },
    usage: { source: "estimate", input_tokens_per_1000: null, output_tokens_per_1000: null, cost_usd_per_1000: 0.1 },
    wall_seconds: 2,
    missing_results: 0,
    missed_included: [
      { id: "W1", title: "Missed one", votes: 1 },
      { id: "W2", title: "Missed two", votes: 0 },
    ],
    data_quality: { records: 10, without_abstract: 1, without_title: 0, duplicates: { found: 1, merged: true } },
    curve: [],
    ...overrides,
  };
}

describe("report.md", () => {
  it("names the studies missed at the job's threshold and at the recommended one", () => {
    const markdown = markdownReport(report());
    expect(markdown).toContain("### Included studies missed at this threshold (2)\n\n| Id | Title | Include votes |");
    expect(markdown).toContain("| W2 | Missed two | 0 |");
    expect(markdown).toContain("### Included studies missed at the recommended threshold, ≥ 1 (0)\n\nNone: every study the review included was kept.");
    const strict = markdownReport(report({ target: { recall: 0.95, threshold: row(3, 3), missed_included: [{ id: "W3", title: "Missed three", votes: 2 }] } }));
    expect(strict).toContain("### Included studies missed at the recommended threshold, ≥ 3 (1)\n\n| Id | Title | Include votes |\n| --- | --- | ---: |\n| W3 | Missed three | 2 |");
  });

  it("holds the criteria and research questions as sent, safe inside the table", () => {
    const markdown = markdownReport(report());
    expect(markdown).toContain("## Criteria sent\n\nResearch questions:\n\n- Does X reduce Y?");
    expect(markdown).toContain("| 1 | Population | include | Adults \\| over 18 with asthma |");
    expect(markdown).toContain("| 2 | Design | exclude | Editorials and letters |");
  });

  it("carries the job's provenance: resolved model, commit, settings and prompt hashes", () => {
    const markdown = markdownReport(report());
    expect(markdown).toContain("| Model requested | `llm-5-nano` |");
    expect(markdown).toContain("| Model resolved (every call went to it) | `gpt-5-nano-2025-08-07` |");
    expect(markdown).toContain("| Service version | 0.1.0, commit `80f5099` |");
    expect(markdown).toContain("| Stage labelling | temperature provider default, max output tokens 800, reasoning effort minimal |");
    expect(markdown).toContain(`| labelling | screening/labelling@1 | \`${"b".repeat(64)}\` |`);
    expect(markdownReport(report({ service: { ...report().service, provenance: null } }))).toContain("## Provenance\n\nThe service recorded no provenance for this job.");
  });

  it("says how the records were imported: duplicates and where the labels came from", () => {
    const markdown = markdownReport(report());
    expect(markdown).toContain("The files held 1 duplicate records (same DOI, PMID or title), merged before screening.");
    expect(markdown).toContain("matches one of the 5 studies in `included.ris` by DOI, PMID or title; 4 matched, 1 did not (included-5).");
  });
});
