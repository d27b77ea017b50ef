import { describe, expect, it } from "vitest";
import { toIndexerJob, toIndexerJobListItem } from "./indexer";
import { toJobStateEvent } from "./job-events";
import type { LiveJobState } from "./jobs";
import { jobReportFields, type Provenance } from "./provenance";
import { toScreeningJob, toScreeningJobListItem, type ScreeningJobRecord } from "./screening";

const provenance: Provenance = {
  model_requested: "llm-5-nano",
  model_resolved: "provider-nano-2026-01",
  models_used: [{ model: "provider-nano-2026-01-07", calls: 3 }],
  service_version: { version: "1.2.3", commit: null },
  provider: { host: "api.example.test", profile: "openai" },
  parameters: { labelling: { temperature: 1, max_output_tokens: 20, reasoning_effort: "minimal" } },
  repetitions: 5,
  threshold: 1,
  decision_rule: "include when at least 1 of 5 votes says include",
  prompts: [{ name: "screening.labelling", template_id: "screening.labelling", sha256: "a".repeat(64) }],
};

const record: ScreeningJobRecord = {
  job_id: "j",
  status: "running",
  progress: 0.5,
  stage: "labelling",
  error: null,
  error_category: null,
  error_retryable: null,
  model_version: "llm-5-nano",
  config: { model: "llm-5-nano", papers_count: 3 },
  stage_timings: {},
  duration_ms: null,
  estimated_cost_usd: 0.01,
  created_at: "2026-01-01T00:00:00.000Z",
  completed_at: null,
  project_id: null,
};

describe("job report fields", () => {
  it("travel from the record's extras into both poll shapes and the listings", () => {
    const extra = { provenance, usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12, estimated_cost_usd: 0.002, calls: 3, retries: 1 }, actual_cost_usd: 0.002 };
    const screening = toScreeningJob({ ...record, extra }, null);
    expect(screening.provenance).toEqual(provenance);
    expect(screening.usage).toMatchObject({ calls: 3, retries: 1, input_tokens: 10 });
    expect(screening.actual_cost_usd).toBe(0.002);
    expect(toScreeningJobListItem({ ...record, extra }).actual_cost_usd).toBe(0.002);
    const indexer = toIndexerJob({ ...record, extra }, { items: [], errors: [] });
    expect(indexer.provenance?.model_resolved).toBe("provider-nano-2026-01");
    expect(indexer.usage.calls).toBe(3);
    expect(toIndexerJobListItem({ ...record, extra }).actual_cost_usd).toBe(0.002);
    // The job's event stream shows the cost so far too.
    const state = { ...record, extra, stage_started_at: null, started_at: null } as unknown as LiveJobState;
    expect(toJobStateEvent(state).actual_cost_usd).toBe(0.002);
  });

  it("read a job recorded before they existed (or unreadable values) as null and empty", () => {
    expect(jobReportFields(undefined)).toEqual({ provenance: null, usage: {}, actual_cost_usd: null });
    expect(jobReportFields({ provenance: { model_requested: 1 }, usage: "x", actual_cost_usd: Number.NaN })).toEqual({
      provenance: null,
      usage: {},
      actual_cost_usd: null,
    });
    expect(toScreeningJob(record, null)).toMatchObject({ provenance: null, usage: {}, actual_cost_usd: null });
  });

  it("give prompt texts on a finished job's poll and only names and hashes on an active one's", () => {
    const texts = { ...provenance, prompts: [{ ...provenance.prompts[0]!, text: "System.\nCriteria: …" }] };
    const extra = { provenance: texts };
    for (const status of ["pending", "running"] as const) {
      expect(toScreeningJob({ ...record, status, extra }, null).provenance).toEqual(provenance);
      expect(toIndexerJob({ ...record, status, extra }, { items: [], errors: [] }).provenance).toEqual(provenance);
    }
    for (const status of ["completed", "failed"] as const) {
      expect(toScreeningJob({ ...record, status, extra }, null).provenance).toEqual(texts);
      expect(toIndexerJob({ ...record, status, extra }, { items: [], errors: [] }).provenance).toEqual(texts);
    }
    expect(jobReportFields(extra).provenance).toEqual(texts);
  });
});
