import { describe, expect, it } from "vitest";
import { LabelError, validateJob, type JobPaper, type ValidationInput } from "./validation";

// R = 2; 20 papers: ids 0–19, scores 2 for 0–5, 1 for 6–11, 0 for 12–17, and two without a result.
const papers: JobPaper[] = Array.from({ length: 20 }, (_, i) => ({ id: `p${i}`, score: i < 6 ? 2 : i < 12 ? 1 : i < 18 ? 0 : null, included: null }));
const input = (labels: ValidationInput["labels"], extra: Partial<ValidationInput> = {}): ValidationInput => ({
  jobId: "job",
  papers,
  repetitions: 2,
  jobThreshold: 1,
  labels,
  targetRecall: 0.5,
  confidence: 0.95,
  ...extra,
});

describe("validation of a job on labelled papers", () => {
  it("refuses ids the job does not have and ids labelled twice, saying which", () => {
    const unknown = () => validateJob(input([{ id: "p1", included: true }, { id: "zz", included: false }]));
    expect(unknown).toThrow(LabelError);
    try {
      unknown();
    } catch (error) {
      expect((error as LabelError).kind).toBe("unknown");
      expect((error as LabelError).labels).toEqual([{ index: 1, id: "zz" }]);
    }
    try {
      validateJob(input([{ id: "p1", included: true }, { id: "p1", included: false }]));
      expect.unreachable();
    } catch (error) {
      expect((error as LabelError).kind).toBe("duplicate");
      expect((error as LabelError).labels).toEqual([{ index: 1, id: "p1" }]);
    }
  });

  it("matches a numeric label to a paper whose id is a string of it", () => {
    const numeric = papers.map((p, i) => ({ ...p, id: i }));
    expect(validateJob(input([{ id: "3", included: true }], { papers: numeric })).labelled).toBe(1);
  });

  it("counts workload on every paper, papers without a result as read, and says when labels fall on them", () => {
    const labels = [
      { id: "p0", included: true },
      { id: "p7", included: true },
      { id: "p13", included: false },
      { id: "p18", included: true },
    ];
    const result = validateJob(input(labels));
    // Threshold 2 keeps the 6 top papers and the 2 without a result: 8 of 20.
    expect(result.thresholds[2]).toMatchObject({ tp: 2, fn: 1, fp: 0, tn: 1, workload: 0.4 });
    expect(result.thresholds[1]!.workload).toBe(0.7);
    expect(result.warnings.join(" ")).toMatch(/1 labelled paper\(s\) have no screening result .*: p18\./);
    expect(result.agreement).toMatchObject({ job_threshold: 1, missed_ids: [], extra_ids: [] });
  });

  it("extrapolates the includes below the recommended threshold from the labelled ones there", () => {
    // Label everything with a result; includes: all of score 2 and 1, one of score 0 (p12).
    const labels = papers.slice(0, 18).map((p, i) => ({ id: p.id, included: i < 12 || i === 12 }));
    const result = validateJob(input(labels, { targetRecall: 0.6 }));
    expect(result.recommended?.votes).toBe(1);
    expect(result.missed_includes).toMatchObject({ votes: 1, papers_below: 6, labelled_below: 6, labelled_includes_below: 1, estimate: 1, upper: 1 });
    // Half the papers below labelled: the other 3 get the labelled rate (1 of 3), bounded by its exact upper limit.
    const half = papers.slice(0, 15).map((p, i) => ({ id: p.id, included: i < 12 || i === 12 }));
    const partial = validateJob(input(half, { targetRecall: 0.6 }));
    expect(partial.missed_includes).toMatchObject({ papers_below: 6, labelled_below: 3, labelled_includes_below: 1, estimate: 2 });
    expect(partial.missed_includes!.upper).toBeGreaterThan(2);
    expect(partial.missed_includes!.upper).toBeLessThanOrEqual(4);
  });

  it("gives no recommendation, with the reason, when the labels cannot support the target", () => {
    const result = validateJob(input([{ id: "p0", included: true }, { id: "p13", included: false }], { targetRecall: 0.95 }));
    expect(result.recommended).toBeNull();
    expect(result.recommendation_reason).toMatch(/95% recall with 95% confidence cannot be shown on this job with a sample/);
    expect(result.recommendation_reason).toMatch(/can show: recall of at least 16\.7% at threshold 1 with 95% confidence.* reading the 6 papers below threshold 1/);
    expect(result.certificate.feasible).toBe(false);
    const none = validateJob(input([{ id: "p13", included: false }]));
    expect(none.recommendation_reason).toMatch(/None of the 1 labelled papers is included, so recall cannot be bounded yet/);
    expect(none.agreement.kappa).toBeNull();
  });
});
