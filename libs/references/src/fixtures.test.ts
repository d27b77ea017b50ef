import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { cleanText, importReferences, parseCsvRows, type ImportResult } from "./index";

/**
 * The acceptance measure for import: the fixtures (PubMed, Ovid/Embase and Scopus RIS, a PubMed NBIB
 * file, a semicolon CSV; written from data/ by scripts/write-import-fixtures.ts) come back with at
 * least 99.5% of their records' titles and abstracts intact against the source records, and every
 * planted duplicate is flagged.
 */

const ROOT = resolve(import.meta.dirname, "../../..");
const FIXTURES = join(ROOT, "libs/references/fixtures");
const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as Record<string, { source: string; records: string[]; duplicates: number[][] }>;

const sources = new Map<string, Map<string, { title: string; abstract: string }>>();
function sourceRecords(path: string): Map<string, { title: string; abstract: string }> {
  const cached = sources.get(path);
  if (cached) return cached;
  const text = gunzipSync(readFileSync(join(ROOT, path))).toString("utf8");
  const records = new Map<string, { title: string; abstract: string }>();
  if (path.endsWith(".csv.gz")) {
    const [header, ...rows] = parseCsvRows(text);
    const col = (name: string) => header!.indexOf(name);
    for (const row of rows) records.set(row[col("record_id")]!, { title: row[col("title")]!, abstract: row[col("abstract")]! });
  } else {
    for (const line of text.split("\n").filter((l) => l.trim())) {
      const r = JSON.parse(line) as { id: string; title: string; abstract: string };
      records.set(r.id, r);
    }
  }
  sources.set(path, records);
  return records;
}

const importFixture = (name: string): ImportResult => importReferences([{ name, text: readFileSync(join(FIXTURES, name), "utf8") }]);

describe("the import fixtures", () => {
  const names = Object.keys(manifest);

  it("cover PubMed, Ovid and Scopus RIS, NBIB, a semicolon CSV, Web of Science, BibTeX and EndNote XML, a few hundred records each", () => {
    expect(names.sort()).toEqual(["asreview-semicolon.csv", "endnote.xml", "ovid-embase.ris", "pubmed.nbib", "pubmed.ris", "scopus.ris", "wos-savedrecs.txt", "zotero.bib"]);
    for (const name of names) expect(manifest[name]!.records.length).toBeGreaterThan(150);
    expect(readFileSync(join(FIXTURES, "ovid-embase.ris"), "utf8")).toMatch(/^\uFEFFTY {2}- JOUR\r\n/);
  });

  it.each(names)("%s: ≥ 99.5% of the records keep title and abstract intact, the planted duplicates are flagged", (name) => {
    const { records: ids, source, duplicates: planted } = manifest[name]!;
    const result = importFixture(name);
    expect(result.counts.read).toBe(ids.length);
    const copies = new Set(planted.map(([, copy]) => copy));
    const originals = sourceRecords(source);
    let intact = 0;
    let compared = 0;
    result.records.forEach((record, position) => {
      if (copies.has(position)) return; // a planted copy may carry a changed title on purpose
      const original = originals.get(ids[position]!)!;
      compared++;
      if (record.title === cleanText(original.title) && record.abstract === cleanText(original.abstract)) intact++;
    });
    expect(compared).toBe(ids.length - planted.length);
    expect(intact / compared).toBeGreaterThanOrEqual(0.995);
    // The made-up bibliographic fields come back on every record (the CSV carries authors, year and journal only).
    for (const record of result.records) {
      expect(record.authors.length, `${name}: ${record.id}`).toBeGreaterThanOrEqual(2);
      expect(record.authors.every((author) => /^[^,]+, \S/.test(author)), `${name}: ${record.authors.join(" / ")}`).toBe(true);
      expect(record.year, `${name}: ${record.id}`).toMatch(/^(199[5-9]|20[0-2]\d)$/);
      expect(record.journal, `${name}: ${record.id}`).toBeTruthy();
      if (!name.endsWith(".csv")) expect([record.volume, record.issue, record.pages?.split("-").length, record.keywords.length >= 2], `${name}: ${record.id}`).toEqual([expect.any(String), expect.any(String), 2, true]);
    }

    for (const [original, copy] of planted as [number, number][]) {
      const pair = [result.records[original]!.id, result.records[copy]!.id];
      expect(result.duplicates.some((group) => pair.every((id) => group.ids.includes(id))), `${name}: ${pair.join(" + ")}`).toBe(true);
    }
    const flagged = new Set(result.duplicates.flatMap((group) => group.ids));
    const plantedIds = new Set(planted.flat().map((position) => result.records[position]!.id));
    // Anything else flagged is a duplicate in the source data itself: the same title under two ids.
    for (const id of flagged) {
      if (plantedIds.has(id)) continue;
      const group = result.duplicates.find((g) => g.ids.includes(id))!;
      expect(group.keys.map((k) => k.key), `${name}: ${group.ids.join(" + ")}`).toEqual(["title"]);
    }
  });

  it("finds a paper in two files (NBIB and CSV from the same review) and merges on request", () => {
    const files = ["pubmed.nbib", "asreview-semicolon.csv"].map((name) => ({ name, text: readFileSync(join(FIXTURES, name), "utf8") }));
    const apart = importReferences(files);
    const merged = importReferences(files, { mergeDuplicates: true });
    expect(new Set(apart.records.map((r) => r.id)).size).toBe(apart.records.length);
    const nbib = manifest["pubmed.nbib"]!.records;
    const csv = manifest["asreview-semicolon.csv"]!.records;
    const shared = csv.filter((id) => nbib.includes(id));
    expect(shared.length).toBe(2);
    for (const sourceId of shared) {
      const pair = [apart.records[nbib.indexOf(sourceId)]!.id, apart.records[nbib.length + csv.indexOf(sourceId)]!.id];
      expect(apart.duplicates.some((group) => pair.every((id) => group.ids.includes(id))), pair.join(" + ")).toBe(true);
    }
    expect(merged.counts.records).toBe(apart.counts.read - apart.counts.duplicates);
    expect(merged.counts.duplicates).toBe(apart.counts.duplicates);
    expect(new Set(merged.records.map((r) => r.id)).size).toBe(merged.records.length);
  });
});
