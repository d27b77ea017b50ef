import { describe, expect, it } from "vitest";
import { screeningPapers, CRITERIA } from "../e2e/screening-fixtures";
import { TEST_API_KEY } from "../support/stack";
import { consoleSuite } from "../support/browser";

/**
 * The methods paragraph as the console renders it on a job's page: the HTML a methodologist selects
 * and pastes. A job created from an import (the console's New job sends the import's counts) gives
 * PRISMA's identification and duplicate counts; every sentence once; brackets balanced; no doubled
 * stops. Compared with a snapshot (the date, version and commit of the run masked).
 */

describe("the console's methods paragraph in headless Chromium", () => {
  const use = consoleSuite({ services: { screening: 1 } });

  it("renders the paragraph of an imported job with its identification and duplicate counts, once each, punctuation balanced", async (ctx) => {
    const { stack, page, pageErrors } = use(ctx);
    // 14 records read from the exports, 2 duplicates merged: 12 papers screened.
    const created = await stack.http("POST", "/v1/screening/jobs", {
      papers: screeningPapers(12),
      criteria: CRITERIA,
      repetitions: 3,
      mock: true,
      identification: { records_identified: 14, duplicates_removed: 2 },
    });
    expect(created.status).toBe(200);
    const jobId = created.body.job_id as string;
    let status = "";
    for (let i = 0; i < 600 && status !== "completed"; i++) {
      status = (await stack.http("GET", `/v1/screening/jobs/${jobId}`)).body.status;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe("completed");
    await page.goto(`${stack.baseUrl}/console`);
    await page.evaluate((key) => sessionStorage.setItem("litrev.console.apiKey", key), TEST_API_KEY);
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await page.reload();
    await page.getByRole("link", { name: "Methods report" }).click();
    const paragraph = page.locator("#methods-paragraph");
    await paragraph.waitFor({ timeout: 30_000 }).catch(async (error) => {
      throw new Error(`${error.message}; page: ${(await page.locator("body").innerText()).slice(0, 1500)}`);
    });
    const text = (await paragraph.textContent())!;
    expect(text).toContain("14 records were identified in the imported database exports; 2 duplicates were removed before screening. Titles and abstracts of the remaining 12 records were screened");
    const sentences = text.split(/(?<=[.!?}])\s+(?=[A-Z{0-9])/);
    expect(sentences.filter((s, i) => sentences.indexOf(s) !== i)).toEqual([]);
    expect(text).not.toMatch(/\.\)\.|\.\.|\s[.,;]|\bnull\b|undefined/);
    for (const [open, close] of ["()", "{}", "[]"]) {
      let depth = 0;
      for (const char of text) {
        depth += char === open ? 1 : char === close ? -1 : 0;
        expect(depth).toBeGreaterThanOrEqual(0);
      }
      expect(depth, `${open}${close} balanced`).toBe(0);
    }
    // The HTML as pasted, with what changes from run to run masked.
    const html = (await paragraph.evaluate((node) => node.outerHTML))
      .replace(/\d{4}-\d{2}-\d{2}/g, "YYYY-MM-DD")
      .replace(/ version [^ ,]+/g, " version X")
      .replace(/ \(commit [0-9a-f]+\)/g, " (commit C)");
    await expect(`${html}\n`).toMatchFileSnapshot("__snapshots__/methods-paragraph.html");
    expect(pageErrors).toEqual([]);
  });
});
