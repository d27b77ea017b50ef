import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { ROOT } from "../../scripts/lib/launch";
import { indexerRecords } from "../support/dataset";
import { TEST_API_KEY } from "../support/stack";
import { CONSOLE_ARTIFACTS, consoleSuite } from "../support/browser";

/**
 * The console in a real browser: headless Chromium (Debian's package, installed by
 * scripts/ensure-chromium.sh when missing) driven by playwright-core against a running stack.
 * It signs in with the key, starts a mock screening job, watches the job's progress bar move to
 * completion through the event stream, opens the job's page (clusters chart, verdicts, the paper table
 * with its sorting, filter, search, pages and detail view, the CSV download and the methods report) and
 * the configuration, and saves a screenshot of each page under test-artifacts/console/.
 * UPDATE_CONSOLE_SCREENSHOT=1 also copies the job page's screenshot to docs/console.png (the README's).
 */

const ARTIFACTS = CONSOLE_ARTIFACTS;

describe("the console in headless Chromium", () => {
  let provider: FakeProvider | undefined;
  // Mock screening jobs need no provider; extraction jobs get the fake one.
  const use = consoleSuite(async () => {
    provider = await startFakeProvider({ latencyMs: 150, respond: extractionResponder() });
    return { services: { screening: 1, indexer: 1 }, env: { OPENAI_API_KEY: "sk-console-test", OPENAI_BASE_URL: provider.url, INDEXER_JOB_RECORD_CONCURRENCY: "1" } };
  });
  afterAll(() => provider?.close());

  it("signs in, follows a mock screening job to completion, and shows its clusters, verdicts and the configuration", async (ctx) => {
    const { stack, page, pageErrors, outside } = use(ctx);
    const shot = async (name: string, fullPage = false) => {
      const path = join(ARTIFACTS, `${name}.png`);
      await page.screenshot({ path, fullPage });
      return path;
    };

    // The page loads without a key, then asks for it.
    const response = await page.goto(`${stack.baseUrl}/console`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-security-policy"]).toContain("default-src 'none'");
    const keyField = page.getByRole("textbox", { name: "Service key (X-API-Key)" });
    await expect.poll(() => keyField.isVisible()).toBe(true);
    await shot("1-sign-in");

    // A wrong key is refused and not kept.
    await keyField.fill("not-the-key");
    await page.getByRole("button", { name: "Open the console" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("refused");
    expect(await page.evaluate("sessionStorage.length")).toBe(0);

    await keyField.fill(TEST_API_KEY);
    await page.getByRole("button", { name: "Open the console" }).click();
    await page.locator("#screening-jobs").waitFor();
    // The key lives in this tab's session storage only.
    expect(await page.evaluate("[sessionStorage.length, localStorage.length]")).toEqual([1, 0]);

    // Every value the job's progress bar takes, recorded in the page as it changes.
    // (Page code as a string: this project's TypeScript has no DOM types.)
    await page.evaluate(`(() => {
      const seen = (window.progressSeen = []);
      new MutationObserver(() => {
        const bar = document.querySelector("#screening-jobs tr[data-job-id] progress");
        if (bar && seen.at(-1) !== bar.value) seen.push(bar.value);
      }).observe(document.querySelector("#screening-jobs"), { subtree: true, childList: true, attributes: true, characterData: true });
    })()`);
    await page.getByLabel("Papers", { exact: true }).fill("5000");
    await page.getByLabel("Repetitions", { exact: true }).fill("5");
    await page.getByRole("button", { name: "Start a mock screening job" }).click();
    const row = page.locator("#screening-jobs tr[data-job-id]").first();
    await row.waitFor({ timeout: 30_000 });
    const jobId = (await row.getAttribute("data-job-id"))!;
    expect(jobId).toMatch(/^[0-9a-f-]{36}$/);

    await expect.poll(() => row.locator('[data-cell="status"]').textContent(), { timeout: 90_000, interval: 100 }).toBe("completed");
    await expect.poll(() => row.locator("progress").getAttribute("value")).toBe("1");
    const seen = (await page.evaluate("window.progressSeen")) as number[];
    // The bar moved through intermediate values (from state events) before it reached the end.
    expect(seen.some((value) => value > 0 && value < 1), `progress values seen: ${seen.join(", ")}`).toBe(true);
    expect(seen.at(-1)).toBe(1);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThanOrEqual(seen[i - 1]!);
    // Stage timings come only from the event stream (the listing has none).
    await expect.poll(() => row.locator('[data-cell="details"]').textContent()).toMatch(/labelling .*assignment/);
    expect(await row.locator('[data-cell="mode"]').textContent()).toBe("mock");
    expect(await row.locator('[data-cell="created"]').textContent()).not.toBe("—");
    await shot("2-jobs");
    // The list filters by status and text.
    await page.locator("#jobs-status").selectOption("failed");
    expect(await page.locator("#screening-jobs tr[data-job-id]").count()).toBe(0);
    await page.locator("#jobs-status").selectOption("all");
    await page.locator("#jobs-text").fill(jobId.slice(0, 8));
    expect(await page.locator("#screening-jobs tr[data-job-id]").count()).toBe(1);
    expect(await page.locator("#screening-jobs-page").textContent()).toBe("Page 1 of 1 · 1 jobs");
    await page.locator("#jobs-text").fill("");
    // The favicon loads without a key.
    expect((await page.request.get(`${stack.baseUrl}/favicon.ico`)).status()).toBe(200);

    // The job's page: clusters as an SVG chart, verdicts per criterion, the papers.
    await row.getByRole("link").click();
    await page.locator("#clusters-chart rect.bar").first().waitFor();
    const bars = await page.locator("#clusters-chart rect.bar").count();
    expect(bars).toBeGreaterThan(0);
    const chartTitle = await page.locator("#clusters-chart-title").textContent();
    expect(chartTitle).toMatch(/^Papers per reason cluster: /);
    const counts = await page.locator("#clusters-chart g > text:last-of-type").allTextContents();
    expect(counts.map(Number).reduce((a, b) => a + b, 0)).toBe(5000);
    expect(await page.locator("#verdicts tbody tr").count()).toBe(3);
    // The exclusion criterion ("Design") is coloured by what it does: met excludes.
    const design = page.locator("#verdicts tbody tr").nth(2);
    expect(await design.locator("td").first().textContent()).toBe("exclude (met excludes)");
    expect(await design.locator("td").nth(1).getAttribute("class")).toBe("num verdict-rejects");
    expect(await page.locator("#contradictions").textContent()).toMatch(/^(\d+ papers have a decision their own verdicts contradict|No paper's decision contradicts)/);
    // The papers: 25 a page, paged, sorted, filtered, searched, and opened one by one.
    const paperIds = () => page.locator("#papers tbody tr th").allTextContents();
    expect(await page.locator("#papers tbody tr").count()).toBe(25);
    expect(await page.locator("#papers-page").textContent()).toBe("Page 1 of 200 · 5000 papers");
    await page.getByRole("button", { name: "Next page" }).click();
    expect((await paperIds())[0]).toBe("demo-26");
    await page.getByRole("button", { name: "Score" }).click();
    expect(await page.locator('th[data-sort="score"]').getAttribute("aria-sort")).toBe("ascending");
    const scores = async () => (await page.locator("#papers tbody tr td:nth-child(4)").allTextContents()).map(Number);
    const ascending = await scores();
    expect(ascending).toEqual([...ascending].sort((a, b) => a - b));
    await page.getByRole("button", { name: "Score" }).click();
    expect(await page.locator('th[data-sort="score"]').getAttribute("aria-sort")).toBe("descending");
    const descending = await scores();
    expect(descending).toEqual([...descending].sort((a, b) => b - a));
    expect(descending[0]).toBeGreaterThanOrEqual(ascending.at(-1)!);
    await page.getByLabel("Show").selectOption("exclude");
    const excluded = await page.locator("#papers tbody tr td:nth-child(3)").allTextContents();
    expect(excluded.length).toBeGreaterThan(0);
    expect(new Set(excluded)).toEqual(new Set(["exclude"]));
    await page.getByLabel("Show").selectOption("all");
    await page.getByLabel("Search").fill("demo-4321");
    expect(await paperIds()).toEqual(["demo-4321"]);
    await page.getByRole("button", { name: "Details of paper demo-4321" }).click();
    const detail = page.locator("#paper-detail");
    await detail.waitFor();
    expect(await detail.locator('[data-detail="votes"]').textContent()).toMatch(/^\d of 5 include \((include|exclude)(, (include|exclude)){4}\)$/);
    expect(await detail.locator("#paper-verdicts tbody tr").count()).toBe(3);
    expect((await detail.locator('[data-detail="reasoning"]').textContent())!.length).toBeGreaterThan(10);
    expect(await detail.locator('[data-detail="error"]').textContent()).toBe("none");
    await page.getByLabel("Search").fill("");

    expect(await page.locator('[data-fact="status"]').textContent()).toBe("completed");
    // A mock job shows no dollar cost.
    expect(await page.locator('[data-fact="actual cost"]').textContent()).toBe("none (mock job)");
    expect(await page.locator('[data-fact="estimated cost"]').textContent()).toBe("none (mock job)");

    await page.evaluate("window.scrollTo(0, 0)");
    const jobShot = await shot("3-job");
    
    // Download links save the export through the API (with the key); the report shows in the page.
    const [csvDownload] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download CSV", exact: true }).click()]);
    expect(csvDownload.suggestedFilename()).toBe(`screening-${jobId}.csv`);
    const csvText = readFileSync((await csvDownload.path())!, "utf8");
    const csvLines = csvText.trimEnd().split("\r\n");
    expect(csvLines[0]).toMatch(/^\uFEFFid,title,decision,final_score,include_votes,repetitions,cluster_id,cluster_label,criterion_1: Population,/);
    expect(csvLines).toHaveLength(5001);
    await page.getByRole("link", { name: "Methods report" }).click();
    const reportText = await page.locator("#report pre").textContent();
    expect(reportText).toMatch(/^# Methods report: /);
    expect(reportText).toMatch(/- 5,?000 papers in the results\./);
    expect(reportText).toContain("Repetitions (votes per paper): 5");
    await shot("3-job-full", true);
    expect(await page.locator("#stage-timings tbody tr").count()).toBe(4);

    // An extraction job's page, followed live until its records are all there.
    // Twelve fields: every one gets its column, with the records' titles beside their ids.
    const names = ["design", ...Array.from({ length: 11 }, (_, i) => `outcome_${i + 1}`)];
    const fields = names.map((name) => ({ name, description: `The study's ${name.replace("_", " ")}`, data_type_primary: "text", data_type_secondary: "NA" }));
    const records = indexerRecords(6, { withAbstractOnly: true });
    const extraction = await stack.http("POST", "/v1/indexer/jobs", { records, fields });
    expect(extraction.status).toBe(200);
    await page.goto(`${stack.baseUrl}/console#/job/indexer/${extraction.body.job_id}`);
    await expect.poll(() => page.locator('[data-fact="status"]').textContent(), { timeout: 60_000, interval: 100 }).toBe("completed");
    expect(await page.locator("#records tbody tr").count()).toBe(6);
    expect(await page.locator("#records-page").textContent()).toBe("Page 1 of 1 · 6 records");
    await expect.poll(() => page.locator("#records thead th").allTextContents()).toEqual(expect.arrayContaining(["ID", "Title", ...names]));
    expect(await page.locator("#records tbody").textContent()).toContain(records[0]!.Title);
    await shot("5-extraction-job", true);

    // The configuration and the prompt list.
    await page.getByRole("link", { name: "Configuration" }).click();
    await page.locator("#prompts tbody tr").first().waitFor();
    expect(await page.locator("#services tbody tr").count()).toBeGreaterThan(0);
    expect(await page.locator("#aliases tbody tr").count()).toBeGreaterThan(0);
    // A long system prompt opens in full.
    const prompt = page.locator("#services details.full-text").first();
    if (await prompt.count()) {
      await prompt.locator("summary").click();
      expect((await prompt.locator("pre").textContent())!.length).toBeGreaterThan(80);
    }
    await shot("4-config", true);

    // Forgetting the key returns to the sign-in form.
    await page.getByRole("button", { name: "Forget key" }).click();
    await expect.poll(() => keyField.isVisible()).toBe(true);
    expect(await page.evaluate("sessionStorage.length")).toBe(0);

    expect(outside, "requests that left the gateway").toEqual([]);
    expect(pageErrors).toEqual([]);
    if (process.env.UPDATE_CONSOLE_SCREENSHOT === "1") copyFileSync(jobShot, join(ROOT, "docs", "console.png"));
  });
});
