import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importReferences, risTagRecords } from "@litrev/references";
import { ROOT } from "../../scripts/lib/launch";
import { CONSOLE_ARTIFACTS, consoleSuite } from "../support/browser";
import { TEST_API_KEY } from "../support/stack";

/**
 * A review team's own references through the console, in headless Chromium: two of the import
 * fixtures (an NBIB and a semicolon CSV) are picked together, parsed in the page by the bundled
 * import library, previewed with their duplicates and missing abstracts counted, and screened by a
 * mock job on two typed criteria, followed to completion on the page. The job's RIS export parses
 * back with every record and its decision; its CSV carries the titles.
 * UPDATE_CONSOLE_SCREENSHOT=1 copies the new-job page's screenshot to docs/console-new-job.png.
 */

const FIXTURES = join(ROOT, "libs/references/fixtures");
const FILES = ["pubmed.nbib", "asreview-semicolon.csv"];

describe("importing references into a new job in the console", () => {
  const use = consoleSuite({ services: { screening: 1, criteria: 1, indexer: 1 } }, ["data:", "blob:"]);

  it("loads an NBIB and a CSV file, screens them with two typed criteria in a mock job, and exports RIS and CSV", async (ctx) => {
    const { stack, page, pageErrors, outside } = use(ctx);
    // What the library makes of the same files in Node: the page must show the same.
    const expected = importReferences(FILES.map((name) => ({ name, text: readFileSync(join(FIXTURES, name), "utf8") })));

    await page.goto(`${stack.baseUrl}/console#/new`);
    await page.getByRole("textbox", { name: "Service key (X-API-Key)" }).fill(TEST_API_KEY);
    await page.getByRole("button", { name: "Open the console" }).click();
    await page.getByRole("heading", { name: "New job" }).waitFor();

    await page.getByLabel(/^Reference files/).setInputFiles(FILES.map((name) => join(FIXTURES, name)));
    const counts = page.locator("#import-counts");
    await counts.waitFor();
    const { records, duplicates, withoutAbstract } = expected.counts;
    expect(await counts.textContent()).toBe(
      `${records} records to screen (${records} read); ${duplicates} duplicates in ${expected.duplicates.length} groups; ${withoutAbstract} without abstract; ${expected.counts.withoutTitle} without title.`,
    );
    expect(duplicates).toBeGreaterThan(0);
    expect(await page.locator("#preview tbody tr").count()).toBe(10);
    expect(await page.locator("#preview tbody tr th").first().textContent()).toBe(expected.records[0]!.id);

    // Merged on request: one record per duplicate group.
    await page.getByRole("button", { name: /^Merge the duplicates/ }).click();
    const merged = records - duplicates;
    await expect.poll(() => counts.textContent()).toMatch(new RegExp(`^${merged} records to screen \\(${records} read\\).*, merged;`));

    await page.getByRole("button", { name: "Add a criterion" }).click();
    await page.getByRole("button", { name: "Add a criterion" }).click();
    await page.getByLabel("Criterion 1 name").fill("Population");
    await page.getByLabel("Criterion 1 text").fill("Adults or children with allergic rhinitis or asthma");
    await page.getByLabel("Criterion 2 name").fill("Design");
    await page.getByLabel("Criterion 2 type").selectOption("exclude");
    await page.getByLabel("Criterion 2 text").fill("Editorials, letters and opinion pieces");
    await page.getByRole("button", { name: "Estimate the cost" }).click();
    await expect.poll(() => page.locator('#estimate [data-fact="estimated cost"]').textContent()).toMatch(/^\$\d/);
    expect(await page.locator("#estimate").innerText()).not.toMatch(/\bnull\b|undefined|NaN/);
    await page.evaluate("window.scrollTo(0, 0)");
    const newJobShot = join(CONSOLE_ARTIFACTS, "8-new-job.png");
    await page.screenshot({ path: newJobShot, fullPage: true });

    await page.getByRole("button", { name: "Start the job" }).click();
    const status = page.locator("#run-status");
    await expect.poll(() => status.textContent(), { timeout: 60_000, interval: 200 }).toBe("completed");
    const jobId = (await page.locator("#run-link").textContent())!;

    const job = await stack.http("GET", `/v1/screening/jobs/${jobId}`);
    const results = job.body.results as { id: string; decision?: string; final_score: number }[];
    expect(results).toHaveLength(merged);
    expect(job.body.config.mock).toBe(true);
    // PRISMA's identification, as the import counted it: records read, duplicates merged away (the methods paragraph says both).
    const report = await stack.http("GET", `/v1/screening/jobs/${jobId}/report?format=json`);
    expect(report.body.prisma).toMatchObject({ records_identified: records, duplicates_removed: duplicates, records_in: merged });
    expect(report.body.methods_paragraph).toContain(`${records} records were identified in the imported database exports; ${duplicates} duplicates were removed before screening.`);

    // The job's page: titles in the paper table; the exports.
    await page.locator("#run-link").click();
    await page.locator("#papers tbody tr").first().waitFor();
    await expect.poll(() => page.locator("#papers tbody tr td.title").first().textContent()).not.toBe("—");

    const save = async (name: string) => {
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name, exact: true }).click()]);
      return readFileSync((await download.path())!, "utf8");
    };
    const ris = await save("Download RIS");
    const back = importReferences([{ name: "export.ris", text: ris }]);
    expect(back.records.map((r) => r.id).sort()).toEqual(results.map((r) => String(r.id)).sort());
    const tags = risTagRecords(ris);
    expect(tags).toHaveLength(merged);
    const threshold = job.body.config.threshold ?? 1;
    const decisions = new Map(results.map((r) => [String(r.id), r.decision ?? (r.final_score >= threshold ? "include" : "exclude")]));
    // The decision travels as the keyword "litrev: include|exclude" (docs/reporting.md), which review tools keep.
    for (const [i, record] of back.records.entries()) {
      expect([tags[i]!.KW].flat(), `record ${record.id}`).toContain(`litrev: ${decisions.get(record.id)}`);
    }

    const csv = await save("Download CSV");
    const header = csv.replace(/^\uFEFF/, "").split(/\r?\n/, 1)[0]!.split(",");
    expect(header).toContain("title");
    const titled = expected.records.find((r) => r.title && !/[",\n]/.test(r.title) && !/^[=+\-@]/.test(r.title))!;
    expect(csv).toContain(titled.title);

    expect(outside, "requests that left the gateway").toEqual([]);
    expect(pageErrors).toEqual([]);
    if (process.env.UPDATE_CONSOLE_SCREENSHOT === "1") copyFileSync(newJobShot, join(ROOT, "docs", "console-new-job.png"));
  }, 120_000);

  it("drafts and refines criteria, and suggests extraction fields, through the AI routes (mock)", async (ctx) => {
    const { stack, page, pageErrors } = use(ctx);
    await page.goto(`${stack.baseUrl}/console#/new`);
    await page.getByRole("heading", { name: "New job" }).waitFor();
    const rows = page.locator("#criteria tbody tr");
    await page.getByLabel("Review description").fill("Nudges aimed at physicians' prescribing behaviour");
    await page.getByLabel("Research question").fill("Do nudges change prescribing by physicians?");
    await page.getByRole("button", { name: "Draft exclude criteria with AI" }).click();
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    expect(await rows.first().locator('[data-field="type"]').inputValue()).toBe("exclude");
    expect(await rows.first().locator('[data-field="value"]').inputValue()).not.toBe("");
    await page.getByRole("button", { name: "Refine these criteria with AI" }).click();
    await expect.poll(() => page.locator("#criteria-editor [role=status]").textContent()).toMatch(/^Done/);
    expect(await rows.count()).toBeGreaterThan(0);

    await page.getByRole("radio", { name: /^Extraction/ }).check();
    expect(await page.locator("#criteria-editor").isVisible()).toBe(false);
    await page.getByLabel(/^Reference files/).setInputFiles(join(FIXTURES, "pubmed.nbib"));
    await page.locator("#import-counts").waitFor();
    await page.getByRole("button", { name: "Suggest fields with AI" }).click();
    await expect.poll(() => page.locator("#fields tbody tr").count()).toBeGreaterThan(0);
    expect(await page.locator('#fields tbody tr [data-field="name"]').first().inputValue()).not.toBe("");
    await page.getByRole("button", { name: "Estimate the cost" }).click();
    await expect.poll(() => page.locator('#estimate [data-fact="estimated cost"]').textContent()).toMatch(/^\$\d/);
    // An extraction estimate (no mock hint) of a file without duplicates: nothing left out shows as "null".
    expect(await page.locator("#estimate").innerText()).not.toMatch(/\bnull\b|undefined|NaN/);
    expect(await page.locator("#import-counts").locator("..").innerText()).not.toMatch(/\bnull\b|undefined|NaN/);
    expect(pageErrors).toEqual([]);
  });

  it("cancels a running job from its page", async (ctx) => {
    const { stack, page, pageErrors } = use(ctx);
    // A large mock job: still running when the page cancels it a moment after it opens.
    const papers = Array.from({ length: 20_000 }, (_, i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: "An abstract about nudges and prescribing." }));
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: [{ name: "Any", type: "include", value: "Anything" }], repetitions: 5, mock: true });
    expect(created.status).toBe(200);
    const jobId = created.body.job_id as string;
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await page.getByRole("button", { name: "Cancel the job" }).click();
    await expect.poll(() => page.locator('[data-fact="status"]').textContent(), { timeout: 30_000 }).toBe("failed");
    expect(await page.getByRole("alert").first().textContent()).toContain("(cancelled): Cancelled by the client");
    expect(await page.getByRole("button", { name: "Cancel the job" }).isVisible()).toBe(false);
    // The papers that finished before the cancel: the page shows them as partial results, as many as its export holds.
    const exported = await stack.http("GET", `/v1/screening/jobs/${jobId}/export?format=jsonl`);
    const finished = String(exported.body ?? "").split("\n").filter(Boolean).length;
    const partial = page.locator("#partial-results");
    await expect.poll(() => partial.textContent(), { timeout: 30_000 }).not.toContain("loading");
    if (finished > 0) {
      expect(await partial.textContent()).toContain(`This job was cancelled before it finished: partial results, ${finished} ${finished === 1 ? "paper" : "papers"} of`);
      expect(await page.locator("#papers-page").textContent()).toContain(`${finished} papers`);
    } else expect(await partial.textContent()).toContain("no paper finished");
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("deletes a finished job from its page", async (ctx) => {
    const { stack, page, pageErrors } = use(ctx);
    const papers = [1, 2, 3].map((i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: "An abstract." }));
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: [{ name: "Any", type: "include", value: "Anything" }], repetitions: 1, mock: true });
    expect(created.status).toBe(200);
    const jobId = created.body.job_id as string;
    await page.goto(`${stack.baseUrl}/console#/job/screening/${jobId}`);
    await expect.poll(() => page.locator('[data-fact="status"]').textContent(), { timeout: 30_000 }).toBe("completed");
    // A finished job offers no cancel.
    expect(await page.getByRole("button", { name: "Cancel the job" }).isVisible()).toBe(false);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Delete the job" }).click();
    await page.waitForURL(/#\/jobs$/);
    expect((await stack.http("GET", `/v1/screening/jobs/${jobId}`)).status).toBe(404);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
