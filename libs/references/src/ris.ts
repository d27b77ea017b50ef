import { plugins, type RisTags } from "@citation-js/core";
import "@citation-js/plugin-ris";
import { normaliseDoi, normalisePmid, PUBMED_DATABASE, yearOf, type SourceReference } from "./record";
import { cleanText } from "./text";

/**
 * RIS through citation-js's RIS reader (@citation-js/plugin-ris), which copes with what real exports
 * do: a byte-order mark, CRLF, values wrapped over several lines, old and new tag sets (Ovid's `T1`,
 * `N2`, `Y1` beside `TI`, `AB`, `PY`). Its conversion to CSL-JSON drops what screening needs (the
 * accession `AN`, and `DO` on journal articles), so the fields are read from its tag records here.
 */

/** Runs of spaces inside a value: the reader splits a line at every `  - `, so one inside a value would cut it short. */
const INNER_SPACES = /(?<=^[A-Z][A-Z0-9] {2}- .*?) {2,}/g;

/** The tag records of a RIS file, in file order. */
export function risTagRecords(text: string): RisTags[] {
  const safe = text
    .split(/\r?\n|\r/)
    .map((line) => line.replace(INNER_SPACES, " "))
    .join("\n");
  return plugins.input.data(safe, "@ris/file");
}

const first = (tags: RisTags, ...names: string[]): string | null => {
  for (const name of names) {
    const value = tags[name];
    const text = Array.isArray(value) ? value.join(" ") : value;
    if (text && text.trim()) return text.trim();
  }
  return null;
};
const all = (tags: RisTags, name: string): string[] => [tags[name] ?? []].flat();


/** `SP` and `EP` as one range (`12-19`); `SP` alone when it is already one, or there is no `EP`. */
const pagesOf = (start: string | null, end: string | null) => (start && end && start !== end ? `${start}-${end}` : start ?? end);

const nonEmpty = (values: string[]) => values.map((value) => value.trim()).filter(Boolean);

/**
 * One RIS record as a reference: title `TI`/`T1`/`CT`/`BT`, abstract `AB`/`N2`, DOI `DO` (or a
 * doi.org link); authors `AU`/`A1`, year `PY`/`Y1`/`DA`, journal `T2`/`JF`/`JO`/`JA`, `VL`, `IS`,
 * pages `SP`-`EP`, accession `AN` (else a Scopus EID), `DB`, `UR`, keywords `KW`. The PMID: a
 * PubMed or MEDLINE accession, else `C2` (where Scopus and this service's exports put it).
 */
export function referenceFromRis(tags: RisTags): SourceReference {
  const database = first(tags, "DB", "DP");
  const accession = first(tags, "AN");
  const urls = all(tags, "UR");
  const pmid = (PUBMED_DATABASE.test(database ?? "") ? normalisePmid(accession) : null) ?? normalisePmid(first(tags, "C2"));
  const eid = urls.map((url) => /[?&]eid=(2-s2\.0-\d+)/.exec(url)?.[1]).find(Boolean) ?? null;
  return {
    sourceId: accession ?? eid ?? first(tags, "ID"),
    title: cleanText(first(tags, "TI", "T1", "CT", "BT")),
    abstract: cleanText(first(tags, "AB", "N2")),
    doi: normaliseDoi(first(tags, "DO")) ?? urls.map((url) => (/doi\.org\//i.test(url) ? normaliseDoi(url) : null)).find(Boolean) ?? null,
    pmid,
    included: null,
    authors: nonEmpty([...all(tags, "AU"), ...all(tags, "A1")]),
    year: yearOf(first(tags, "PY", "Y1", "DA")),
    journal: cleanText(first(tags, "T2", "JF", "JO", "JA")) || null,
    volume: first(tags, "VL"),
    issue: first(tags, "IS"),
    pages: pagesOf(first(tags, "SP"), first(tags, "EP")),
    accession: accession ?? eid,
    database,
    url: urls.map((url) => url.trim()).find(Boolean) ?? null,
    keywords: nonEmpty(all(tags, "KW")),
  };
}

export function risReferences(text: string): SourceReference[] {
  return risTagRecords(text).map(referenceFromRis);
}
