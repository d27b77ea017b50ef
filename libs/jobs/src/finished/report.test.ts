import { describe, expect, it } from "vitest";
import { JobReport, type Provenance } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import type { FinishedJob } from "./finished-job";
import { completeReport } from "./methods-text";
import { buildReport as reportOf, OutcomeCounter, reportMarkdown, type PromptInstructions } from "./report";

const record = (over: Record<string, unknown> = {}) =>
  ({
    job_id: "0b0e5f3c-0000-4000-8000-000000000001",
    status: "completed",
    progress: 1,
    stage: "Complete",
    error: null,
    error_category: null,
    error_retryable: null,
    model_version: "llm-5-nano",
    config: { model: "llm-5-nano", repetitions: 3, threshold: 1, mock: false, papers_count: 5, criteria_count: 1 },
    stage_timings: {},
    duration_ms: 12_500,
    estimated_cost_usd: 0.02,
    created_at: "2026-11-24T10:00:00.000Z",
    completed_at: "2026-11-24T10:00:12.500Z",
    project_id: null,
    extra: {},
    ...over,
  }) as unknown as FinishedJob["record"];

const finished = (chunks: JsonRecord[][], over?: Record<string, unknown>): FinishedJob => ({
  record: record(over),
  result: {},
  chunks: async function* () {
    yield* chunks;
  },
});

const paper = (id: string, decision: string, error?: string) => ({ id, decision, final_score: decision === "include" ? 2 : 0, cluster_id: 0, reasoning: "r", ...(error ? { error } : {}) });

/** The report of a finished job, its outcomes counted over its chunks as the worker counts them. */
async function buildReport(service: "screening" | "indexer", job: FinishedJob, prompts?: PromptInstructions) {
  const counter = new OutcomeCounter(service);
  for await (const chunk of job.chunks()) counter.add(chunk);
  return reportOf(service, job.record, counter, prompts);
}

const BARE_PROVENANCE: Provenance = {
  model_requested: "llm-5-nano",
  model_resolved: "gpt-5-nano",
  models_used: [],
  service_version: { version: "1", commit: null },
  provider: { host: "api.example.org", profile: "openai" },
  parameters: {},
  repetitions: 3,
  threshold: 1,
  decision_rule: "include when at least 1 of 3 votes say include",
  prompts: [],
};

describe("methods report", () => {
  it("counts decisions and errors over every chunk, and fills what the record has", async () => {
    const report = await buildReport("screening", finished([[paper("a", "include"), paper("b", "exclude")], [paper("c", "include", "The model lost this paper"), paper("d", "exclude"), paper("e", "exclude")]]));
    expect(JobReport.parse(report)).toEqual(report);
    expect(report.outcomes).toEqual({ items: 5, by_outcome: { include: 2, exclude: 3 }, errors: 1 });
    expect(report).toMatchObject({ kind: "screening", repetitions: 3, threshold: 1, mock: false, duration_ms: 12_500 });
    expect(report.model.requested).toBe("llm-5-nano");
    expect(report.limitations.length).toBeGreaterThan(2);
  });

  it("renders the model, counts, repetitions and prompts, and says 'not recorded' for what a job did not record", async () => {
    const bare = reportMarkdown(await buildReport("screening", finished([[paper("a", "include")]])));
    expect(bare).toContain("- Requested: llm-5-nano");
    expect(bare).toContain("- 1 paper in the results.");
    expect(bare).toContain("- Repetitions (votes per paper): 3");
    expect(bare).toMatch(/## Prompts\n\n(not recorded|### )/);
    expect(bare).toContain("estimated at creation: $0.0200");

    const provenance: Provenance = {
      model_requested: "llm-5-nano",
      model_resolved: "gpt-5-nano-2025-08-07",
      models_used: [{ model: "gpt-5-nano-2025-08-07", calls: 14 }],
      service_version: { version: "0.4.0", commit: "abc1234" },
      provider: { host: "api.openai.com", profile: "openai" },
      parameters: { labelling: { temperature: 1, max_output_tokens: 2000, reasoning_effort: "minimal" } },
      repetitions: 3,
      threshold: 1,
      decision_rule: "include when at least 1 of 3 votes says include",
      prompts: [{ name: "screening.labelling", template_id: "screening.labelling", sha256: "a".repeat(64) }],
    };
    const full = await buildReport("screening", finished([[paper("a", "include")]]), (name) => (name === "screening.labelling" ? "Vote on each paper." : undefined));
    const md = reportMarkdown({
      ...full,
      tool: { ...full.tool, version: "0.4.0", commit: "abc1234" },
      model: { requested: "llm-5-nano", resolved: provenance.model_resolved, reported: provenance.models_used, provider: provenance.provider },
      parameters: provenance.parameters,
      decision_rule: provenance.decision_rule,
      prompts: provenance.prompts.map((p) => ({ ...p, instructions: "Vote on each paper." })),
      usage: { input_tokens: 1200, output_tokens: 300, cached_input_tokens: 0, calls: 14, retries: 1 },
      actual_cost_usd: 0.0123,
    });
    expect(md).toContain("- Resolved at admission: gpt-5-nano-2025-08-07");
    expect(md).toContain("- Reported by the provider: gpt-5-nano-2025-08-07 (14 calls)");
    expect(md).toContain("version 0.4.0 (commit abc1234)");
    expect(md).toContain("- labelling: temperature 1, max output tokens 2000, reasoning effort minimal");
    expect(md).toContain("### screening.labelling");
    expect(md).toContain("a".repeat(64));
    expect(md).toContain("Vote on each paper.");
    expect(md).toContain("- Actual cost: $0.0123");
    expect(md).toContain("- Calls: 14; retries: 1");
  });

  it("lists both decisions when every paper went one way, and says a setting the service did not send was the provider's default", async () => {
    const md = reportMarkdown(
      await buildReport("screening", finished([[paper("a", "include"), paper("b", "include")]], {
        extra: { provenance: { ...BARE_PROVENANCE, parameters: { labelling: { temperature: null, max_output_tokens: 4096, reasoning_effort: null } } } },
      })),
    );
    expect(md).toContain("- include: 2\n- exclude: 0\n");
    expect(md).toContain("- labelling: temperature not sent (provider default), max output tokens 4096, reasoning effort not sent (provider default)");
  });

  it("shows no dollar figure for a mock job", async () => {
    const md = reportMarkdown(await buildReport("screening", finished([[paper("a", "include")]], { config: { model: "llm-5-nano", repetitions: 1, mock: true } })));
    expect(md).toContain("- Actual cost: none (mock job); estimated at creation: none (mock job)");
    expect(md).not.toMatch(/\$\d/);
  });

  it("counts an extraction job's records by status", async () => {
    const report = await buildReport("indexer", finished([[{ ID: "1", indexing_status: "ok" }, { ID: "2", indexing_status: "error" }, { ID: "3", indexing_status: "no_abstract" }]], { config: { model: "llm-5-mini" } }));
    expect(report.outcomes).toEqual({ items: 3, by_outcome: { ok: 1, error: 1, no_abstract: 1 }, errors: 1 });
    expect(reportMarkdown(report)).toContain("- 3 records in the results.");
  });

  it("escapes everything an admin or a client set: no raw HTML, no link, no line of its own (issue 30)", async () => {
    const report = await buildReport("screening", finished([[paper("a", "include")]]));
    const hostile = "x` <img src=x onerror=alert(1)> [click](javascript:alert(1)) **b**\n# Injected heading";
    const md = reportMarkdown({
      ...report,
      error: hostile,
      model: { requested: hostile, resolved: hostile, reported: [{ model: hostile, calls: 1 }], provider: { host: hostile, profile: hostile } },
      tool: { ...report.tool, version: hostile, commit: hostile },
      prompts: [{ name: "screening.labelling", template_id: hostile, sha256: "a".repeat(64), instructions: "Vote on each paper." }],
    });
    expect(md).not.toMatch(/(^|[^\\])<img/);
    expect(md).not.toMatch(/(^|[^\\])\]\(javascript:/);
    expect(md).not.toMatch(/(^|[^\\])\*\*b/);
    expect(md).not.toMatch(/^# Injected heading/m);
    expect(md).toContain("\\<img src=x onerror=alert(1)\\> \\[click\\](javascript:alert(1))");
    // What the service itself writes keeps its form.
    expect(md).toContain("Vote on each paper.");
    expect(md).toMatch(/^## Known limitations$/m);
  });

  it("prints what the job was asked and each prompt's text in a fence that a criterion's backticks cannot close", async () => {
    const criterion = "Adults ``` # not a heading";
    const extra = {
      provenance: {
        ...BARE_PROVENANCE,
        parameters: { labelling: { temperature: null, max_output_tokens: 4096, reasoning_effort: "minimal" } },
        prompts: [{ name: "screening.labelling", template_id: "t", sha256: "b".repeat(64), text: `System.\n${criterion}` }],
        criteria: [{ name: "Population", type: "include", text: criterion }],
        questions: ["Does it work?"],
      } satisfies Provenance,
    };
    const report = completeReport(await buildReport("screening", finished([[paper("a", "include"), paper("b", "exclude")]], { extra })), null);
    const md = reportMarkdown(report);
    expect(md).toContain("# Methods report: Title and abstract screening of 5 papers against 1 criterion");
    expect(md).toContain("- Criterion 1 (include), Population: Adults \\`\\`\\` # not a heading");
    expect(md).toContain("- Research question 1: Does it work?");
    expect(md).toContain(["````text", "System.", criterion, "````"].join("\n"));
    expect(md).toContain("- labelling: temperature not sent (provider default), max output tokens 4096, reasoning effort minimal");
    // Both decisions are listed, a zero too; the PRISMA counts and the checklist follow.
    expect(md).toContain("- include: 1\n- exclude: 1");
    expect(report.prisma).toEqual({ records_in: 5, results: 2, included: 1, excluded: 1, errored: 0, without_abstract: null, exclusion_reasons: { "no single criterion": 1 } });
    expect(md).toContain("| RAISE, PRISMA-trAIce | Role of the AI (sole screener, second reviewer, triage) and human oversight | *for you to fill in* |");
    expect(report.methods_paragraph).toContain("through the provider at api.example.org");
    expect(report.methods_paragraph).toContain("Each paper was judged 3 times independently against 1 eligibility criterion (1 for inclusion, 0 for exclusion) and 1 research question");
    expect(report.methods_paragraph).toContain("{For you to fill in: the model's role in the review");
    expect(md).toContain("{For you to fill in: the model's role in the review");
    expect(JobReport.parse(report)).toEqual(report);
  });
});
