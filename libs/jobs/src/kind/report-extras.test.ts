import { describe, expect, it } from "vitest";
import { jobReportFields, type Provenance } from "@litrev/contracts";
import { jobReportExtras } from "./report-extras";

const totals = { input_tokens: 1200, cached_input_tokens: 200, output_tokens: 300, cost_usd: 0.00123456789, calls: 4, retries: 1, models: { "m-2025-01-01": 3, "m-2025-02-01": 1 } };

describe("jobReportExtras", () => {
  it("gives usage, the actual cost and the provenance with the models the provider reported, readable as the poll's report fields", () => {
    const provenance = { model_requested: "m", model_resolved: "m" } as unknown as Provenance;
    const extras = jobReportExtras(totals, provenance, true);
    expect(extras).toEqual({
      usage: { input_tokens: 1200, cached_input_tokens: 200, output_tokens: 300, total_tokens: 1500, estimated_cost_usd: 0.001235, calls: 4, retries: 1 },
      actual_cost_usd: 0.001235,
      provenance: { ...provenance, models_used: [{ model: "m-2025-01-01", calls: 3 }, { model: "m-2025-02-01", calls: 1 }] },
    });
    expect(jobReportFields(extras).usage.total_tokens).toBe(1500);
  });

  it("has no actual cost for an unpriced job and no provenance when none was described", () => {
    const extras = jobReportExtras(totals, undefined, false);
    expect(extras.actual_cost_usd).toBeNull();
    expect(extras).not.toHaveProperty("provenance");
  });
});
