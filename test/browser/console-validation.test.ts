import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { screeningPapers, CRITERIA } from "../e2e/screening-fixtures";
import { TEST_API_KEY } from "../support/stack";
import { CONSOLE_ARTIFACTS, consoleSuite } from "../support/browser";

/**
 * The console's validation panel in headless Chromium: on a completed mock screening job's page, a
 * pasted `id,included` CSV is posted to the validation route and the page shows the threshold
 * table, the recommendation and the recall-against-workload plot with its bounds. A screenshot
 * goes to test-artifacts/console/.
 */

const ARTIFACTS = CONSOLE_ARTIFACTS;
const R = 5;

describe("the console's validation panel in headless Chromium", () => {
  const use = consoleSuite({ services: { screening: 1 } });

  it("validates a completed job on a pasted CSV and shows the table, the recommendation and the plot", async (ctx) => {
    const { stack, page, pageErrors, outside } = use(ctx);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(400), criteria: CRITERIA, repetitions: R, mock: true });
    expect(created.status).toBe(200);
    const jobId = created.body.job_id as string;
    let job: { status: string; results: { id: string; final_score: number }[] } | undefined;
    for (let i = 0; i < 600 && job?.status !== "completed"; i++) {
      job = (await stack.http("GET", `/v1/screening/jobs/${jobId}`)).body;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job?.status).toBe("completed");
    // Every other paper labelled, following the votes: includes are those with 2 or more.
    const csv = ["id,included", ...job!.results.filter((_, i) => i % 2 === 0).map((r) => `${r.id},${r.final_score >= 2 ? 1 : 0}`)].join("\n");

    await page.goto(`${stack.baseUrl}/console`);
    await page.getByRole("textbox", { name: "Service key (X-API-Key)" }).fill(TEST_API_KEY);
    await page.getByRole("button", { name: "Open the console" }).click();
    await page.locator("#screening-jobs").waitFor();
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await page.locator("#validation").waitFor({ timeout: 30_000 });

    // An unreadable line is refused in the page, before any call.
    await page.locator("#validation-csv").fill("id,included\np1,maybe");
    await page.getByRole("button", { name: "Validate" }).click();
    await expect.poll(() => page.locator("#validation [role=alert]").textContent()).toContain("Line 2");
    // An id the job does not have: the route's 400 is shown.
    await page.locator("#validation-csv").fill("nope,1");
    await page.getByRole("button", { name: "Validate" }).click();
    await expect.poll(() => page.locator("#validation [role=alert]").textContent()).toContain("Not a paper of this job: nope");

    await page.locator("#validation-csv").fill(csv);
    await page.locator("#validation-target").fill("0.9");
    await page.getByRole("button", { name: "Validate" }).click();
    await page.locator("#validation-table").waitFor();
    expect(await page.locator("#validation-table tbody tr").count()).toBe(R + 1);
    // Labels that follow the votes exactly: recall is 100% up to threshold 2, which is recommended.
    expect(await page.locator("#validation-recommendation").textContent()).toMatch(/^Recommended: include papers with at least 2 of 5 include votes/);
    expect(await page.locator("#validation-table tr.chosen th").textContent()).toBe("2");
    expect(await page.locator("#validation-plot g.threshold-point").count()).toBe(R + 1);
    expect(await page.locator("#validation-plot g.threshold-point line").count()).toBe(R + 1);
    // Axes: a grid line and two tick labels per tenth-quarter, and the target line.
    expect(await page.locator("#validation-plot > text").allTextContents()).toEqual(expect.arrayContaining(["0%", "50%", "100%", "Recall", "target 90.0%"]));
    expect(await page.locator("#validation-agreement").textContent()).toContain("Cohen's kappa");
    await page.locator("#validation").screenshot({ path: join(ARTIFACTS, "6-validation.png") });
    expect(pageErrors).toEqual([]);
    expect(outside).toEqual([]);
  });

  it("suggests the fewest labels that can certify the chosen target, never most of the job, and shows the plan with no null", async (ctx) => {
    const { stack, page, pageErrors } = use(ctx);
    const papers = 435;
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(papers), criteria: CRITERIA, repetitions: R, mock: true });
    const jobId = created.body.job_id as string;
    let status = "";
    for (let i = 0; i < 600 && status !== "completed"; i++) {
      status = (await stack.http("GET", `/v1/screening/jobs/${jobId}`)).body.status;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe("completed");
    // The key as the console's sign-in keeps it (this test may run alone, before any sign-in).
    await page.goto(`${stack.baseUrl}/console`);
    await page.evaluate((key) => sessionStorage.setItem("litrev.console.apiKey", key), TEST_API_KEY);
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await page.reload();
    await page.locator("#validation-sample").waitFor({ timeout: 30_000 });
    // What the page shows against what the service planned for the drawn sample.
    const drawAt = async (target: string) => {
      const before = await page.locator("#sample-id").inputValue();
      await page.locator("#sample-target").fill(target);
      await page.getByRole("button", { name: "Draw a sample" }).click();
      await expect.poll(() => page.locator("#sample-id").inputValue()).not.toBe(before);
      const id = await page.locator("#sample-id").inputValue();
      const sample = (await stack.http("GET", `/v1/screening/jobs/${jobId}/validation-samples/${id}`)).body;
      const text = await page.locator("#validation-sample").innerText();
      expect(text).not.toMatch(/\bnull\b|undefined|NaN/);
      return { sample, plan: (await page.locator("#sample-plan").textContent()) ?? "" };
    };
    // The default plan is one look after the last label, the fewest labels: the sample is its plan's size.
    const easy = await drawAt("0.8");
    const byPlan = easy.sample.labels_needed_by_plan as { once: number | null; anytime: number | null };
    expect(easy.sample.plan).toBe("once");
    expect(byPlan.once).not.toBeNull();
    expect(byPlan.once!).toBeLessThanOrEqual(byPlan.anytime ?? Infinity);
    expect(byPlan.once!).toBeLessThanOrEqual(papers / 2);
    expect(easy.sample.paper_ids).toHaveLength(byPlan.once!);
    expect(easy.plan).toContain(`Labels needed to certify 80% recall on this job's ${papers} papers: about ${byPlan.once} looking once after the last label`);
    expect(easy.plan).toContain(byPlan.anytime === null ? "no sample smaller than the job looking as labels arrive" : `about ${byPlan.anytime} looking as labels arrive`);
    // A target whose plan is most of the job (or more than any sample): never most of the job drawn, and said why.
    for (const target of ["0.9", "0.95"]) {
      const hard = await drawAt(target);
      expect(hard.sample.paper_ids.length).toBeLessThanOrEqual(papers / 2);
      if (hard.sample.labels_needed === null || hard.sample.labels_needed > papers / 2) {
        expect(hard.plan).toMatch(/That is (most of the job|more than any sample): this sample of \d+ shows what can be shown instead\./);
      }
    }
    expect(pageErrors).toEqual([]);
  });

  it("draws a sample, takes two batches of labels and shows the certificate and its looks", async (ctx) => {
    const { stack, page, pageErrors, outside } = use(ctx);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(300), criteria: CRITERIA, repetitions: R, mock: true });
    const jobId = created.body.job_id as string;
    let job: { status: string; results: { id: string; final_score: number }[] } | undefined;
    for (let i = 0; i < 600 && job?.status !== "completed"; i++) {
      job = (await stack.http("GET", `/v1/screening/jobs/${jobId}`)).body;
      await new Promise((r) => setTimeout(r, 100));
    }
    const score = new Map(job!.results.map((r) => [String(r.id), r.final_score]));
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await page.locator("#validation-sample").waitFor({ timeout: 30_000 });
    await page.locator("#sample-target").fill("0.8");
    await page.locator("#sample-size").fill("120");
    // Looking as labels arrive: each batch is a look with a bound of its own.
    await page.locator("#sample-plan-choice").selectOption("anytime");
    await page.getByRole("button", { name: "Draw a sample" }).click();
    await page.locator("#sample-summary").waitFor();
    expect(await page.locator("#sample-summary").textContent()).toMatch(/120 papers \(simple, seed \d+\), 0 labelled\. One-sided: recall of at least 80% with 95% confidence/);
    const sampleId = await page.locator("#sample-id").inputValue();
    const ids: string[] = (await stack.http("GET", `/v1/screening/jobs/${jobId}/validation-samples/${sampleId}`)).body.paper_ids.map(String);
    // The sample for blind screening, as the service writes it: order, id, title, abstract, an empty decision.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the sample (CSV)" }).click()]);
    const sampleText = readFileSync((await download.path())!, "utf8");
    expect(sampleText.replace(/^\uFEFF/, "").split(/\r?\n/, 1)[0]).toBe("order,id,title,abstract,included");
    expect(sampleText.trimEnd().split(/\r?\n/)).toHaveLength(121);
    const batch = (from: number, to: number) => ["id,included", ...ids.slice(from, to).map((id) => `${id},${score.get(id)! >= 2 ? 1 : 0}`)].join("\n");
    for (const [from, to] of [[0, 60], [60, 120]] as const) {
      await page.locator("#sample-labels").fill(batch(from, to));
      await page.getByRole("button", { name: "Add labels" }).click();
      await expect.poll(() => page.locator("#sample-summary").textContent()).toContain(`${to} labelled`);
    }
    expect(await page.locator("#sample-table tbody tr").count()).toBe(R);
    expect(await page.locator("#sample-plot circle.look").count()).toBe(2);
    expect(await page.locator("#sample-certificate").textContent()).toMatch(/^Certified: threshold \d|cannot|below the target|None of the/);
    // One conclusion and nothing else: no "null" where the plan stood before the certificate.
    // (innerText: paragraphs on lines of their own, so a stray "null" has word boundaries.)
    expect(await page.locator("#sample-output").innerText()).not.toMatch(/\bnull\b|undefined|NaN/);
    // The job's export with the sample marked: every paper, the 120 sampled ones with their labels.
    const [marked] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export the job with this sample marked (CSV)" }).click()]);
    const rows = readFileSync((await marked.path())!, "utf8").replace(/^\uFEFF/, "").trimEnd().split(/\r?\n/);
    expect(rows[0]!.split(",").slice(-2)).toEqual(["validation_sampled", "validation_label"]);
    expect(rows.length - 1).toBe(job!.results.length);
    expect(rows.filter((row) => /,true,(include|exclude)$/.test(row))).toHaveLength(120);
    await page.locator("#validation-sample").screenshot({ path: join(ARTIFACTS, "7-validation-sample.png") });
    expect(pageErrors).toEqual([]);
    expect(outside).toEqual([]);
  });
});
