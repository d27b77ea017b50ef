import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Cite } from "@citation-js/core";
import "@citation-js/plugin-ris";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importReferences, paperBibliography, risTagRecords, toScreeningPaper, type ImportedRecord } from "@litrev/references";
import { startStack, waitFor, type Stack } from "../support/stack";

/**
 * The library round trip a review team relies on: every import fixture (eight database and tool
 * exports) is imported, screened (mock) through the gateway with its bibliographic fields, exported
 * as RIS, and the export imported again, by the project's reader and by citation-js's own CSL
 * conversion (what Zotero-like tools build on). Every bibliographic field must come back equal and
 * every paper's decision must be there; the figure for authors, years, DOIs and decisions is logged.
 */

const FIXTURES = resolve(import.meta.dirname, "../../libs/references/fixtures");
const NAMES = readdirSync(FIXTURES).filter((name) => !/^(manifest\.json|README\.md|\.gitattributes)$/.test(name));

/** The fields compared: what the paper came with, as the import reads it. */
const FIELDS = ["title", "abstract", "authors", "year", "journal", "volume", "issue", "pages", "doi", "pmid", "accession", "database", "url", "keywords"] as const;
/** The service's own keywords (the decision), told apart from the paper's. */
const OURS = /^litrev[ :]/;

const fieldsOf = (record: ImportedRecord) => ({
  title: record.title,
  abstract: record.abstract,
  ...paperBibliography(record),
  keywords: record.keywords.filter((k) => !OURS.test(k)),
});

interface CslItem {
  author?: { family?: string; given?: string; literal?: string }[];
  issued?: { "date-parts"?: (number | string)[][] };
  DOI?: string;
}

describe("bibliographic round trip: import → screen → RIS export → import (issue 35)", () => {
  let stack: Stack;
  const totals = { records: 0, authors: 0, years: 0, dois: 0, doisIn: 0, decisions: 0, cslAuthors: 0, cslYears: 0, cslDois: 0 };

  beforeAll(async () => {
    stack = await startStack({ services: { screening: 1 } });
  }, 180_000);
  afterAll(async () => {
    console.log(
      `[bibliography round trip] ${NAMES.length} fixtures, ${totals.records} records: authors ${totals.authors}/${totals.records}, years ${totals.years}/${totals.records}, ` +
        `DOIs ${totals.dois}/${totals.doisIn}, decisions ${totals.decisions}/${totals.records}; through citation-js's CSL: authors ${totals.cslAuthors}, years ${totals.cslYears}, DOIs ${totals.cslDois}`,
    );
    await stack?.stop();
  });

  it.each(NAMES)("%s: every field and every decision comes back", { timeout: 240_000 }, async (name) => {
    const imported = importReferences([{ name, text: readFileSync(join(FIXTURES, name), "utf8") }]).records;
    const papers = imported.map(toScreeningPaper);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: [{ name: "Adults", type: "include", value: "Adults" }], repetitions: 1, mock: true });
    expect(created.status, JSON.stringify(created.body).slice(0, 500)).toBe(200);
    const id = created.body.job_id as string;
    const job = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : undefined;
    }, 200_000, 500);
    expect(job.status).toBe("completed");
    const decisions = new Map((job.results as { id: string; decision: string }[]).map((r) => [String(r.id), r.decision]));

    const res = await fetch(`${stack.baseUrl}/v1/screening/jobs/${id}/export?format=ris`, { headers: { authorization: "Bearer test-service-key-0123456789" } });
    expect(res.status).toBe(200);
    const ris = await res.text();

    const back = importReferences([{ name: "export.ris", text: ris }]).records;
    const tags = risTagRecords(ris);
    expect(back).toHaveLength(imported.length);
    const csl = new Cite(ris).data as CslItem[];
    expect(csl).toHaveLength(imported.length);
    for (const [i, original] of imported.entries()) {
      const again = back[i]!;
      // The paper's id is the record's ID (and RevMan's NS); its decision a keyword.
      expect(tags[i]!.ID).toBe(original.id);
      expect(tags[i]!.NS).toBe(original.id);
      const decision = decisions.get(original.id);
      expect(decision, original.id).toMatch(/^(include|exclude)$/);
      expect([tags[i]!.KW ?? []].flat(), original.id).toContain(`litrev: ${decision}`);
      const want = fieldsOf(original);
      expect(fieldsOf(again), `${name}: ${original.id}`).toEqual(want);
      expect(Object.keys(want).filter((key) => !(FIELDS as readonly string[]).includes(key))).toEqual([]);

      totals.records++;
      totals.decisions++;
      if (again.authors.length && again.authors.join() === original.authors.join()) totals.authors++;
      if (again.year && again.year === original.year) totals.years++;
      if (original.doi) totals.doisIn++;
      if (original.doi && again.doi === original.doi) totals.dois++;
      const item = csl[i]!;
      if ((item.author ?? []).length === original.authors.length) totals.cslAuthors++;
      if (String(item.issued?.["date-parts"]?.[0]?.[0] ?? "") === original.year) totals.cslYears++;
      if (original.doi && item.DOI?.toLowerCase() === original.doi) totals.cslDois++;
    }
  });
});
