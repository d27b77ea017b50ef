import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { thresholdTable } from "@litrev/evaluation";
import { startStack, waitFor, type HttpResult, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * The validation route end to end: a mock screening job through the real stack, labels posted,
 * and every figure of the answer recomputed here from the job's poll and the labels, with exact
 * binomial bounds found from the binomial distribution itself (not from the code under test).
 */

const ALICE = "alice-validation-key-0123456789";
const BOB = "bob-validation-key-0123456789ab";
const PAPERS = 300;
const R = 5;

interface Result {
  id: string;
  final_score: number;
  decision: "include" | "exclude";
}
interface Label {
  id: string;
  included: boolean;
}

/** P(X ≤ k), X ~ Binomial(n, p), summed in log space. */
function binomialCdf(k: number, n: number, p: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  const lf = [0];
  for (let i = 1; i <= n; i++) lf.push(lf[i - 1]! + Math.log(i));
  let sum = 0;
  for (let i = 0; i <= k; i++) sum += Math.exp(lf[n]! - lf[i]! - lf[n - i]! + (i ? i * Math.log(p) : 0) + (n - i ? (n - i) * Math.log1p(-p) : 0));
  return Math.min(1, sum);
}

/** Exact bounds by bisection on the binomial tails: P(X ≥ x | low) = α/2 and P(X ≤ x | high) = α/2. */
function exactBounds(x: number, n: number, confidence: number): { low: number; high: number } {
  const tail = (1 - confidence) / 2;
  const solve = (f: (p: number) => number, level: number) => {
    // f rises with p; find where it crosses `level`.
    let lo = 0;
    let hi = 1;
    for (let i = 0; i < 200; i++) {
      const mid = (lo + hi) / 2;
      if (f(mid) < level) lo = mid;
      else hi = mid;
    }
    return (lo + hi) / 2;
  };
  return {
    low: x === 0 ? 0 : solve((p) => 1 - binomialCdf(x - 1, n, p), tail),
    // P(X ≤ x | p) falls as p rises: its complement crosses 1 − α/2 at the upper bound.
    high: x === n ? 1 : solve((p) => 1 - binomialCdf(x, n, p), 1 - tail),
  };
}

/** Every figure of the answer, from the results and the labels alone. */
function expected(results: Result[], labels: Label[], confidence: number, jobThreshold: number) {
  const score = new Map(results.map((r) => [r.id, r.final_score]));
  const decision = new Map(results.map((r) => [r.id, r.decision === "include"]));
  const rows = Array.from({ length: R + 1 }, (_, t) => {
    const c = { tp: 0, fp: 0, fn: 0, tn: 0 };
    for (const l of labels) {
      const read = score.get(l.id)! >= t;
      if (l.included) c[read ? "tp" : "fn"]++;
      else c[read ? "fp" : "tn"]++;
    }
    const workload = results.filter((r) => r.final_score >= t).length / results.length;
    const recall = c.tp + c.fn ? c.tp / (c.tp + c.fn) : null;
    return { votes: t, ...c, recall, recall_ci: c.tp + c.fn ? exactBounds(c.tp, c.tp + c.fn, confidence) : null, specificity: c.tn + c.fp ? c.tn / (c.tn + c.fp) : null, specificity_ci: c.tn + c.fp ? exactBounds(c.tn, c.tn + c.fp, confidence) : null, precision: c.tp + c.fp ? c.tp / (c.tp + c.fp) : null, workload };
  });
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  const missed: string[] = [];
  const extra: string[] = [];
  for (const l of labels) {
    const job = decision.get(l.id)!;
    expect(job).toBe(score.get(l.id)! >= jobThreshold);
    if (job && l.included) a++;
    else if (job) {
      b++;
      extra.push(l.id);
    } else if (l.included) {
      c++;
      missed.push(l.id);
    } else d++;
  }
  const n = labels.length;
  const po = (a + d) / n;
  const pe = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n);
  return { rows, kappa: pe === 1 ? null : (po - pe) / (1 - pe), po, missed, extra, includes: labels.filter((l) => l.included).length };
}

function compareBounds(actual: { low: number; high: number } | null, exact: { low: number; high: number } | null) {
  if (exact === null) return expect(actual).toBeNull();
  expect(actual!.low).toBeCloseTo(exact.low, 9);
  expect(actual!.high).toBeCloseTo(exact.high, 9);
  // Never more optimistic than exact.
  expect(actual!.low).toBeLessThanOrEqual(exact.low + 1e-12);
  expect(actual!.high).toBeGreaterThanOrEqual(exact.high - 1e-12);
}

describe("validating a screening job on a labelled sample (gateway + screening, real nats-server)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let jobId: string;
  let results: Result[];
  let jobThreshold: number;

  const as = (key: string) => ({ headers: { "x-api-key": key } });
  const validate = (body: unknown, id = jobId, key = ALICE, prefix = "/v1"): Promise<HttpResult> => stack.http("POST", `${prefix}/screening/jobs/${id}/validation`, body, as(key));

  beforeAll(async () => {
    // A slow provider keeps a provider-backed job running while its validation is asked for.
    provider = await startFakeProvider({ latencyMs: 3_000, respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 1 },
      env: { API_KEYS: `alice:use:${ALICE},bob:use:${BOB}`, OPENAI_API_KEY: "sk-validation-server", OPENAI_BASE_URL: provider.url, BODY_LIMIT_MB: "2" },
    });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: R, threshold: 3, mock: true }, as(ALICE));
    expect(created.status).toBe(200);
    jobId = created.body.job_id;
    const done = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${jobId}`, undefined, as(ALICE));
      return res.body.status === "completed" ? res.body : null;
    }, 90_000, 100);
    results = done.results.map((r: Result) => ({ id: String(r.id), final_score: r.final_score, decision: r.decision }));
    jobThreshold = done.config.threshold;
    expect(results).toHaveLength(PAPERS);
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  /** A random-looking half of the papers, labelled by a rule that mostly follows the votes (every 7th flipped). */
  const sampleLabels = (): Label[] =>
    results.filter((_, i) => i % 2 === 0).map((r, i) => ({ id: r.id, included: (r.final_score >= 3) !== (i % 7 === 0) }));

  it("answers every figure as recomputed from the poll and the labels, with exact bounds", async () => {
    const labels = sampleLabels();
    for (const [target, confidence] of [[0.6, 0.95], [0.8, 0.9], [0.99, 0.95]] as const) {
      const res = await validate({ labels, target_recall: target, confidence });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      const want = expected(results, labels, confidence, jobThreshold);
      const body = res.body;
      expect(body).toMatchObject({ job_id: jobId, papers: PAPERS, labelled: labels.length, labelled_included: want.includes, repetitions: R, target_recall: target, confidence });
      expect(body.thresholds).toHaveLength(R + 1);
      want.rows.forEach((row, t) => {
        const got = body.thresholds[t];
        expect(got).toMatchObject({ votes: row.votes, tp: row.tp, fp: row.fp, fn: row.fn, tn: row.tn });
        expect(got.recall).toBeCloseTo(row.recall!, 12);
        expect(got.specificity).toBeCloseTo(row.specificity!, 12);
        expect(got.precision).toBeCloseTo(row.precision!, 12);
        expect(got.workload).toBeCloseTo(row.workload, 12);
        expect(got.work_saved).toBeCloseTo(1 - row.workload, 12);
        expect(got.wss).toBeCloseTo(1 - row.workload - (1 - row.recall!), 12);
        // Recall bounds are the certificate's (anytime-valid, one-sided by default): threshold 0 reads everything.
        if (t === 0) expect(got.recall_ci).toEqual({ low: 1, high: 1 });
        else {
          const cert = body.certificate.thresholds[t - 1];
          expect(cert.votes).toBe(t);
          expect(got.recall_ci).toEqual({ low: cert.recall_lower, high: 1 });
          expect(got.recall_ci.low).toBeLessThanOrEqual(row.recall! + 1e-12);
        }
        compareBounds(got.specificity_ci, row.specificity_ci);
      });
      expect(body.sides).toBe("one");
      expect(body.certificate.statement).toMatch(/^One-sided/);
      // Fixed sequence: the last threshold from 1 up whose certified bound reaches the target before the first that does not.
      let best: number | null = null;
      for (const row of body.certificate.thresholds) {
        if (row.recall_lower === null || row.recall_lower < target) break;
        best = row.votes;
      }
      if (best !== null) {
        expect(body.recommended).toMatchObject({ votes: best });
        expect(body.recommended.workload).toBeCloseTo(want.rows[best]!.workload, 12);
        expect(body.recommended.recall_ci.low).toBeGreaterThanOrEqual(target);
        expect(body.recommendation_reason).toBeNull();
      } else {
        expect(body.recommended).toBeNull();
        expect(body.recommendation_reason).toMatch(/below the target|cannot be shown/);
      }
      expect(body.agreement.kappa).toBeCloseTo(want.kappa!, 12);
      expect(body.agreement.observed_agreement).toBeCloseTo(want.po, 12);
      expect(body.agreement.job_threshold).toBe(jobThreshold);
      expect(body.agreement.missed_ids).toEqual(want.missed);
      expect(body.agreement.extra_ids).toEqual(want.extra);
      if (best === null) expect(body.missed_includes).toBeNull();
      else {
        const papersBelow = results.filter((r) => r.final_score < best).length;
        const labelledBelow = labels.filter((l) => results.find((r) => r.id === l.id)!.final_score < best);
        const found = labelledBelow.filter((l) => l.included).length;
        expect(body.missed_includes).toMatchObject({ votes: best, papers_below: papersBelow, labelled_below: labelledBelow.length, labelled_includes_below: found });
        // An upper bound on the includes below: never fewer than the labelled ones found there, never more than the unlabelled room.
        expect(body.missed_includes.upper).toBeGreaterThanOrEqual(found);
        expect(body.missed_includes.upper).toBeLessThanOrEqual(papersBelow - labelledBelow.length + found);
      }
      expect(body.warnings.some((w: string) => /not a simple random sample/.test(w))).toBe(false);
    }
    // Some target gave a recommendation with an estimate below it, and 0.99 gave none.
    const recommended = await validate({ labels, target_recall: 0.6 });
    expect(recommended.body.recommended).not.toBeNull();
    expect(recommended.body.missed_includes).not.toBeNull();
  });

  it("agrees to the last digit with the offline harness's figures when every paper is labelled, and serves the path without /v1", async () => {
    const labels = results.map((r, i) => ({ id: r.id, included: (r.final_score >= 2) !== (i % 5 === 0) }));
    const res = await validate({ labels }, jobId, ALICE, "");
    expect(res.status).toBe(200);
    const harness = thresholdTable(
      results.map((r, i) => ({ id: r.id, score: r.final_score, included: labels[i]!.included })),
      R,
      0.95,
    );
    // Every paper labelled: the certificate's bounds are exact (nothing left unread to bound).
    const plain = (row: Record<string, unknown>) => ({ ...row, recall_ci: null });
    expect(res.body.thresholds.map(plain)).toStrictEqual(JSON.parse(JSON.stringify(harness)).map(plain));
    res.body.thresholds.forEach((row: { votes: number; recall: number; recall_ci: { low: number } }) => expect(row.recall_ci.low).toBeCloseTo(row.votes === 0 ? 1 : row.recall, 12));
  });

  it("warns when the labels come from the top of the ranking only", async () => {
    const top = results.filter((r) => r.final_score >= 4).map((r) => ({ id: r.id, included: true }));
    expect(top.length).toBeGreaterThan(20);
    const res = await validate({ labels: top });
    expect(res.status).toBe(200);
    expect(res.body.warnings.join(" ")).toMatch(/not a simple random sample of the job/);
    expect(res.body.warnings.join(" ")).toMatch(/No labelled paper is excluded/);
  });

  it("refuses every bad input with a clear 4xx, never a 5xx", async () => {
    const labels = sampleLabels().slice(0, 10);
    // Ids not in the job: 400 naming each.
    const unknown = await validate({ labels: [...labels, { id: "no-such-paper", included: true }, { id: 12345, included: false }] });
    expect(unknown.status).toBe(400);
    const named = unknown.body.detail.map((issue: { msg: string; loc: unknown[] }) => [issue.msg, issue.loc]);
    expect(named).toEqual([
      ["Not a paper of this job: no-such-paper", ["body", "labels", 10, "id"]],
      ["Not a paper of this job: 12345", ["body", "labels", 11, "id"]],
    ]);
    // Duplicates: 400 naming the repeated label.
    const duplicate = await validate({ labels: [...labels, { id: labels[3]!.id, included: !labels[3]!.included }] });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.detail[0].msg).toBe(`Labelled more than once: ${labels[3]!.id}`);
    // Empty, missing or malformed labels and settings: field-level 400s.
    for (const body of [{ labels: [] }, {}, { labels: [{ id: "p1" }] }, { labels, target_recall: 1 }, { labels, target_recall: 0 }, { labels, confidence: 1 }, { labels, confidence: "high" }]) {
      const res = await validate(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Array.isArray(res.body.detail), JSON.stringify(res.body)).toBe(true);
    }
    const notJson = await stack.http("POST", `/v1/screening/jobs/${jobId}/validation`, undefined, { headers: { "x-api-key": ALICE, "content-type": "application/json" }, rawBody: "{labels" });
    expect(notJson.status).toBe(400);
    // Oversized: more labels than any job has papers (400), and a body over BODY_LIMIT_MB (413).
    const many = await validate({ labels: Array.from({ length: 50_001 }, (_, i) => ({ id: i, included: false })) });
    expect(many.status).toBe(400);
    const huge = await validate({ labels: [{ id: "x".repeat(3 * 1024 * 1024), included: true }] });
    expect(huge.status).toBe(413);
    // Missing, malformed and another client's job: 404 as a poll answers.
    for (const [id, key] of [["00000000-0000-4000-8000-000000000000", ALICE], ["not-a-job-id", ALICE], [jobId, BOB]] as const) {
      const res = await validate({ labels }, id, key);
      expect(res.status, `${id} as ${key}`).toBe(404);
      expect(res.body).toEqual({ detail: "Job not found" });
      const poll = await stack.http("GET", `/v1/screening/jobs/${id}`, undefined, as(key));
      expect(poll.status).toBe(404);
    }
    // No key: 401.
    expect((await stack.http("POST", `/v1/screening/jobs/${jobId}/validation`, { labels }, { auth: false })).status).toBe(401);
  });

  it("answers 409 while the job has not completed", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 1 }, as(ALICE));
    expect(created.status).toBe(200);
    const res = await validate({ labels: [{ id: "p1", included: true }] }, created.body.job_id);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/^The job is (pending|running): it can be validated once it has completed$/);
  });
});
