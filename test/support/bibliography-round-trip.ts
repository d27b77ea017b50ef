import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { Cite } from "@citation-js/core";
import "@citation-js/plugin-ris";
import { expect } from "vitest";
import { importReferences, paperBibliography, risTagRecords, type ImportedRecord } from "@litrev/references";

/**
 * The library round trip a review team relies on (issue 35), shared by the in-process test
 * (libs/jobs, every run) and the one through a running stack (test/e2e): a fixture's records, and
 * the RIS export of the job that screened them, imported again by the project's reader and by
 * citation-js's own conversion to CSL-JSON (what Zotero-like tools build on).
 */

export const FIXTURES = resolve(import.meta.dirname, "../../libs/references/fixtures");
/** Every import fixture (each format the import reads). */
export const FIXTURE_NAMES = readdirSync(FIXTURES).filter((name) => !/^(manifest\.json|README\.md|\.gitattributes)$/.test(name));

/** The service's own keywords (the decision), told apart from the paper's. */
const OURS = /^litrev[ :]/;

/** What a record came with, as the import reads it: title, abstract and the bibliographic fields. */
const fieldsOf = (record: ImportedRecord) => ({
  title: record.title,
  abstract: record.abstract,
  ...paperBibliography(record),
  keywords: record.keywords.filter((k) => !OURS.test(k)),
});

interface CslItem {
  author?: unknown[];
  issued?: { "date-parts"?: (number | string)[][] };
  DOI?: string;
}

export interface RoundTripCounts {
  records: number;
  authors: number;
  years: number;
  dois: number;
  doisIn: number;
  decisions: number;
  cslAuthors: number;
  cslYears: number;
  cslDois: number;
}

export const emptyCounts = (): RoundTripCounts => ({ records: 0, authors: 0, years: 0, dois: 0, doisIn: 0, decisions: 0, cslAuthors: 0, cslYears: 0, cslDois: 0 });

/**
 * Asserts that the RIS export `ris` of a job over `imported` (in order) gives every record back with
 * every field equal, its id in `ID` and `NS`, and its decision (`decisions`: id → include/exclude) as
 * a keyword; adds what came back to `counts`.
 */
export function checkRoundTrip(name: string, imported: readonly ImportedRecord[], ris: string, decisions: ReadonlyMap<string, string>, counts: RoundTripCounts): void {
  const back = importReferences([{ name: "export.ris", text: ris }]).records;
  const tags = risTagRecords(ris);
  const csl = new Cite(ris).data as CslItem[];
  expect(back).toHaveLength(imported.length);
  expect(csl).toHaveLength(imported.length);
  for (const [i, original] of imported.entries()) {
    const again = back[i]!;
    expect(tags[i]!.ID).toBe(original.id);
    expect(tags[i]!.NS).toBe(original.id);
    const decision = decisions.get(original.id);
    expect(decision, original.id).toMatch(/^(include|exclude)$/);
    expect([tags[i]!.KW ?? []].flat(), original.id).toContain(`litrev: ${decision}`);
    expect(fieldsOf(again), `${name}: ${original.id}`).toEqual(fieldsOf(original));

    counts.records++;
    counts.decisions++;
    if (again.authors.length > 0 && again.authors.join("|") === original.authors.join("|")) counts.authors++;
    if (again.year && again.year === original.year) counts.years++;
    if (original.doi) counts.doisIn++;
    if (original.doi && again.doi === original.doi) counts.dois++;
    const item = csl[i]!;
    if ((item.author ?? []).length === original.authors.length) counts.cslAuthors++;
    if (String(item.issued?.["date-parts"]?.[0]?.[0] ?? "") === original.year) counts.cslYears++;
    if (original.doi && item.DOI?.toLowerCase() === original.doi) counts.cslDois++;
  }
}

export const describeCounts = (fixtures: number, c: RoundTripCounts) =>
  `${fixtures} fixtures, ${c.records} records: authors ${c.authors}/${c.records}, years ${c.years}/${c.records}, DOIs ${c.dois}/${c.doisIn}, decisions ${c.decisions}/${c.records}; ` +
  `through citation-js's CSL: authors ${c.cslAuthors}/${c.records}, years ${c.cslYears}/${c.records}, DOIs ${c.cslDois}/${c.doisIn}`;
