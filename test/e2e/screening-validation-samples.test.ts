import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { risTagRecords } from "@litrev/references";
import { cleanText } from "@litrev/references/text";
import { parseCsv } from "../support/dataset";
import { startStack, waitFor, type HttpResult, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * Validation samples end to end: the screening service draws a sample of a finished mock job,
 * takes its labels in five batches (each a recorded look, answered with the certificate), keeps
 * it for its owner only and returns it by GET; and on an 882-paper review where 8 of 180 labelled
 * papers are included (about 2% of the job would be ~18 includes) it says in plain words that
 * 95% recall with 95% confidence cannot be shown, and what can.
 */

const ALICE = "alice-samples-key-0123456789abc";
const BOB = "bob-samples-key-0123456789abcde";

interface Result {
  id: string;
  final_score: number;
}

describe("validation samples drawn and kept by the screening service (gateway + screening, real nats-server)", () => {
  let stack: Stack;
  const as = (key: string) => ({ headers: { "x-api-key": key } });
  const post = (path: string, body: unknown, key = ALICE): Promise<HttpResult> => stack.http("POST", path, body, as(key));

  async function finishedJob(papers: number, key = ALICE): Promise<{ jobId: string; results: Result[] }> {
    const created = await post("/v1/screening/jobs", { papers: screeningPapers(papers), criteria: CRITERIA, repetitions: 5, threshold: 2, mock: true }, key);
    expect(created.status).toBe(200);
    const jobId = created.body.job_id as string;
    const done = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${jobId}`, undefined, as(key));
      return res.body.status === "completed" ? res.body : null;
    }, 90_000, 100);
    return { jobId, results: done.results.map((r: Result) => ({ id: String(r.id), final_score: r.final_score })) };
  }

  beforeAll(async () => {
    stack = await startStack({ services: { screening: 1 }, env: { API_KEYS: `alice:use:${ALICE},bob:use:${BOB}` } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("draws a sample, takes its labels in five batches, and keeps every look and the certificate for its owner", async () => {
    const { jobId, results } = await finishedJob(400);
    const score = new Map(results.map((r) => [r.id, r.final_score]));
    const drawn = await post(`/v1/screening/jobs/${jobId}/validation-samples`, { target_recall: 0.8, design: "stratified", size: 200, seed: 42 });
    expect(drawn.status, JSON.stringify(drawn.body).slice(0, 300)).toBe(200);
    const sample = drawn.body;
    expect(sample).toMatchObject({ job_id: jobId, design: "stratified", seed: 42, target_recall: 0.8, confidence: 0.95, sides: "one", labelled: 0, looks: [] });
    expect(sample.paper_ids).toHaveLength(200);
    expect(new Set(sample.paper_ids.map(String)).size).toBe(200);
    for (const id of sample.paper_ids) expect(score.has(String(id))).toBe(true);
    // The strata add up to the sample and to the job, each with its inclusion probability.
    expect(sample.strata.reduce((s: number, l: { sampled: number }) => s + l.sampled, 0)).toBe(200);
    expect(sample.strata.reduce((s: number, l: { papers: number }) => s + l.papers, 0)).toBe(400);
    for (const l of sample.strata) expect(l.inclusion_probability).toBeCloseTo(l.papers ? l.sampled / l.papers : 0, 12);
    expect(sample.certificate.statement).toMatch(/^One-sided: recall of at least 80% with 95% confidence/);

    // The same seed draws the same papers in the same order.
    const again = await post(`/v1/screening/jobs/${jobId}/validation-samples`, { target_recall: 0.8, design: "stratified", size: 200, seed: 42 });
    expect(again.body.paper_ids).toEqual(sample.paper_ids);
    expect(again.body.sample_id).not.toBe(sample.sample_id);

    // Labels: the screener is right except on every 9th paper; five batches of 40, in the sample's order.
    const truth = (id: string, i: number) => (score.get(id)! >= 2) !== (i % 9 === 0);
    const base = `/v1/screening/jobs/${jobId}/validation-samples/${sample.sample_id}`;
    let last: HttpResult | undefined;
    for (let batch = 0; batch < 5; batch++) {
      const labels = sample.paper_ids.slice(batch * 40, batch * 40 + 40).map((id: string, j: number) => ({ id, included: truth(String(id), batch * 40 + j) }));
      last = await post(`${base}/labels`, { labels });
      expect(last.status, JSON.stringify(last.body).slice(0, 300)).toBe(200);
      expect(last.body.labelled).toBe(40 * (batch + 1));
      expect(last.body.looks).toHaveLength(batch + 1);
      expect(last.body.warnings).toEqual([]);
    }
    const answer = last!.body;
    const includes = sample.paper_ids.filter((id: string, i: number) => truth(String(id), i)).length;
    expect(answer.certificate).toMatchObject({ labelled: 200, labelled_included: includes, design: "stratified" });
    expect(answer.certificate.thresholds).toHaveLength(5);
    for (const row of answer.certificate.thresholds) {
      expect(row.net_work_saved).toBeCloseTo((row.papers_below - row.labelled_below) / 400, 12);
    }
    if (answer.certificate.recommended === null) expect(answer.certificate.reason).toMatch(/\S/);
    else expect(answer.certificate.recommended.recall_lower).toBeGreaterThanOrEqual(0.8);
    // Kappa and the discordant papers: the 9th-paper flips, each with its votes and both decisions.
    const flipped = sample.paper_ids.filter((_: string, i: number) => i % 9 === 0).map(String);
    expect(answer.agreement.discordant.map((d: { id: string }) => String(d.id)).sort()).toEqual(flipped.sort());
    expect(answer.agreement.kappa).toBeGreaterThan(0);

    // Stored: GET returns the sample with every look and the latest certificate, with and without /v1.
    for (const prefix of ["/v1", ""]) {
      const got = await stack.http("GET", `${prefix}/screening/jobs/${jobId}/validation-samples/${sample.sample_id}`, undefined, as(ALICE));
      expect(got.status).toBe(200);
      expect(got.body).toEqual(answer);
    }

    // The methods report cites the latest certificate: this sample's last look.
    const report = await stack.http("GET", `/v1/screening/jobs/${jobId}/report?format=json`, undefined, as(ALICE));
    expect(report.status).toBe(200);
    expect(report.body.recall_certificate).toMatchObject({
      sample_id: sample.sample_id,
      design: "stratified",
      sample_size: 200,
      labelled: 200,
      labelled_included: includes,
      threshold: answer.certificate.recommended?.votes ?? null,
      statement: answer.certificate.statement,
      at: answer.looks.at(-1).at,
    });
    const markdown = await stack.http("GET", `/v1/screening/jobs/${jobId}/report`, undefined, as(ALICE));
    expect(String(markdown.body)).toContain("## Recall certificate");
    expect(String(markdown.body)).toContain(`Sample ${sample.sample_id} (stratified, 200 papers; 200 labelled, ${includes} included)`);

    // The sample downloads for blind screening: its papers in the order drawn, titles and abstracts, nothing of the model's.
    const byId = new Map(screeningPapers(400).map((p) => [p.id, p]));
    const download = async (format: string, key = ALICE) => {
      const res = await fetch(`${stack.baseUrl}${base}/download?format=${format}`, { headers: { "x-api-key": key } });
      return { status: res.status, body: new TextDecoder("utf-8", { ignoreBOM: true }).decode(await res.arrayBuffer()) };
    };
    const csv = await download("csv");
    expect(csv.status).toBe(200);
    expect(csv.body.startsWith("\uFEFForder,id,title,abstract,included\r\n")).toBe(true);
    const rows = parseCsv(csv.body.slice(1)).slice(1);
    expect(rows.map((r) => r[1])).toEqual(sample.paper_ids.map(String));
    for (const [i, row] of rows.entries()) {
      const paper = byId.get(row[1]!)!;
      // Markup and white space cleaned as in every export, then the spreadsheet's formula guard.
      const guarded = (text: string) => cleanText(text).replace(/^([=+\-@\t\r])/, "'$1");
      expect(row).toEqual([String(i + 1), paper.id, guarded(paper.title), guarded(paper.abstract), ""]);
    }
    const ris = await download("ris");
    expect(ris.status).toBe(200);
    const records = risTagRecords(ris.body);
    expect(records.map((r) => r.ID)).toEqual(sample.paper_ids.map(String));
    for (const record of records) {
      expect(record.TI).toBe(byId.get(String(record.ID))!.title);
      expect(record.KW ?? record.N1).toBeUndefined();
    }
    expect((await download("csv", BOB)).status).toBe(404);

    // Another client: 404, for reading and for labelling; an unknown sample too.
    expect((await stack.http("GET", base, undefined, as(BOB))).status).toBe(404);
    expect((await post(`${base}/labels`, { labels: [{ id: sample.paper_ids[0], included: true }] }, BOB)).status).toBe(404);
    expect((await post(`/v1/screening/jobs/${jobId}/validation-samples`, { target_recall: 0.8 }, BOB)).status).toBe(404);
    expect((await stack.http("GET", `/v1/screening/jobs/${jobId}/validation-samples/00000000-0000-4000-8000-000000000000`, undefined, as(ALICE))).status).toBe(404);

    // Bad labels: a paper outside the sample, or one relabelled differently: 400 naming it.
    const outside = results.find((r) => !sample.paper_ids.map(String).includes(r.id))!;
    const wrong = await post(`${base}/labels`, { labels: [{ id: outside.id, included: true }] });
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail[0].msg).toBe(`Not a paper of this sample: ${outside.id}`);
    const relabel = await post(`${base}/labels`, { labels: [{ id: sample.paper_ids[1], included: !truth(String(sample.paper_ids[1]), 1) }] });
    expect(relabel.status).toBe(400);
    expect(relabel.body.detail[0].msg).toMatch(/^Labelled differently in an earlier batch/);
  });

  it("answers a sample planned for one look as progress until its last label, then with the exact bound: 59 of 59 includes kept certifies 95%", async () => {
    const { jobId, results } = await finishedJob(400);
    const score = new Map(results.map((r) => [r.id, r.final_score]));
    const drawn = await post(`/v1/screening/jobs/${jobId}/validation-samples`, { design: "simple", plan: "once", size: 300, seed: 5 });
    expect(drawn.status, JSON.stringify(drawn.body).slice(0, 300)).toBe(200);
    expect(drawn.body).toMatchObject({ plan: "once", look_every: null });
    // The labels each plan is expected to need, shown before any is spent.
    // (Both null where the job's vote histogram gives the estimate nothing to fit, as this mock job's may.)
    expect(Object.keys(drawn.body.labels_needed_by_plan).sort()).toEqual(["anytime", "once"]);
    expect(drawn.body.labels_needed_by_plan.once).toEqual(drawn.body.labels_needed);
    const ids: string[] = drawn.body.paper_ids.map(String);
    // 59 of the sampled papers kept at threshold 1 are included, every other paper excluded.
    const kept = ids.filter((id) => score.get(id)! >= 1).slice(0, 59);
    expect(kept).toHaveLength(59);
    const included = new Set(kept);
    const labels = ids.map((id) => ({ id, included: included.has(id) }));
    const path = `/v1/screening/jobs/${jobId}/validation-samples/${drawn.body.sample_id}/labels`;
    const early = await post(path, { labels: labels.slice(0, 150) });
    expect(early.status).toBe(200);
    expect(early.body.certificate).toMatchObject({ plan: "once", look: "progress", recommended: null });
    expect(early.body.certificate.reason).toMatch(/^Progress: 150 of the sample's 300 papers are labelled/);
    const last = await post(path, { labels: labels.slice(150) });
    expect(last.status).toBe(200);
    const cert = last.body.certificate;
    expect(cert).toMatchObject({ plan: "once", look: "certificate", labelled: 300, labelled_included: 59 });
    expect(cert.thresholds[0].votes).toBe(1);
    expect(cert.thresholds[0].recall_lower).toBeGreaterThanOrEqual(0.9505);
    expect(cert.recommended.votes).toBeGreaterThanOrEqual(1);
    const report = await stack.http("GET", `/v1/screening/jobs/${jobId}/report?format=json`, undefined, as(ALICE));
    expect(report.body.recall_certificate).toMatchObject({ plan: "once", look: "certificate", sample_size: 300 });
    expect(report.body.methods_paragraph).toContain("analysed once, after its last label, as planned before labelling");
  });

  it("marks a sample's papers and labels in the job's export with sample=<sample_id>, for the sample's owner only", async () => {
    const { jobId, results } = await finishedJob(60);
    const drawn = await post(`/v1/screening/jobs/${jobId}/validation-samples`, { size: 20, seed: 7 });
    expect(drawn.status).toBe(200);
    const sampleId = drawn.body.sample_id as string;
    const sampled: string[] = drawn.body.paper_ids.map(String);
    // The first eight labelled, alternately included and excluded; the other twelve not yet.
    const labels = sampled.slice(0, 8).map((id, i) => ({ id, included: i % 2 === 0 }));
    expect((await post(`/v1/screening/jobs/${jobId}/validation-samples/${sampleId}/labels`, { labels })).status).toBe(200);
    const exported = async (query: string, key = ALICE) => {
      const res = await fetch(`${stack.baseUrl}/v1/screening/jobs/${jobId}/export?${query}`, { headers: { "x-api-key": key } });
      return { status: res.status, body: await res.text() };
    };

    const csv = await exported(`format=csv&csv=plain&sample=${sampleId}`);
    expect(csv.status).toBe(200);
    const [header, ...rows] = parseCsv(csv.body);
    expect(header!.slice(-2)).toEqual(["validation_sampled", "validation_label"]);
    expect(rows).toHaveLength(results.length);
    const label = new Map(labels.map((l) => [l.id, l.included ? "include" : "exclude"]));
    for (const row of rows) {
      const id = row[0]!;
      expect(row.slice(-2), id).toEqual([String(sampled.includes(id)), label.get(id) ?? ""]);
    }
    expect(rows.filter((r) => r.at(-2) === "true")).toHaveLength(20);
    // Without the parameter the export is as before: no marks.
    const plain = await exported("format=csv&csv=plain");
    expect(parseCsv(plain.body)[0]).toEqual(header!.slice(0, -2));

    // Another client's sample (drawn on that client's own job) or an unknown one: 404 as the sample routes answer; a malformed id: 400.
    const bob = await finishedJob(10, BOB);
    const bobs = await post(`/v1/screening/jobs/${bob.jobId}/validation-samples`, { size: 5, seed: 1 }, BOB);
    expect(bobs.status).toBe(200);
    for (const other of [bobs.body.sample_id, "00000000-0000-4000-8000-000000000000"]) {
      const res = await exported(`format=csv&sample=${other}`);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body)).toEqual({ detail: "Validation sample not found" });
    }
    expect((await exported(`format=csv&sample=${sampleId}`, BOB)).status).toBe(404);
    expect((await exported("format=csv&sample=not-a-sample")).status).toBe(400);
  });

  it("says in plain words that 95%/95% cannot be shown on an 882-paper review with 8 includes in 180 labels, and what can", async () => {
    const { jobId } = await finishedJob(882);
    const drawn = await post(`/v1/screening/jobs/${jobId}/validation-samples`, { size: 300, seed: 3 });
    expect(drawn.status).toBe(200);
    const ids: string[] = drawn.body.paper_ids.slice(0, 180);
    // 8 of the first 180 are included: the screener kept them all.
    const labels = ids.map((id, i) => ({ id, included: i % 22 === 0 && i < 176 }));
    expect(labels.filter((l) => l.included)).toHaveLength(8);
    const res = await post(`/v1/screening/jobs/${jobId}/validation-samples/${drawn.body.sample_id}/labels`, { labels });
    expect(res.status).toBe(200);
    const cert = res.body.certificate;
    expect(cert.recommended).toBeNull();
    expect(cert.feasible).toBe(false);
    expect(res.body.feasible).toBe(false);
    expect(cert.reason).toMatch(/95% recall with 95% confidence cannot be shown on this job with a sample/);
    expect(cert.reason).toMatch(/What these labels can show: |These labels cannot show any recall yet/);
    expect(cert.reason).toMatch(/reading the \d+ papers below threshold 1 as well/);
    expect(cert.can_show.read_below.papers).toBeGreaterThan(0);
  });
});
