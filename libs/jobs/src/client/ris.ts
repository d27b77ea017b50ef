/**
 * RIS records as reference managers and screening tools import them: `TAG  - value` lines, each
 * record from `TY` to `ER`. A value is one line: line breaks inside it become spaces (a reader would
 * take the next line for a continuation or a tag, or a forged record). Which tags carry a job's outcome, and why: docs/reporting.md.
 */
import type { Bibliography } from "@litrev/contracts";

export interface RisRecord {
  id: string;
  title: string;
  abstract: string;
  /** What the paper came with, written back with the tags reference managers read. */
  bibliography?: Bibliography | null;
  keywords: readonly string[];
  notes: readonly string[];
}

/**
 * Every line or record separator a reader may split on (Python's `str.splitlines()`: LF, CR, VT, FF,
 * FS, GS, RS, NEL, U+2028, U+2029), with the white space around it, folds into one space.
 */
// eslint-disable-next-line no-control-regex -- the control characters are what it folds
const LINE_BREAKS = /[\s\x1c-\x1e\x85]*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029][\s\x1c-\x1e\x85]*/g;
const oneLine = (value: string) => value.replace(LINE_BREAKS, " ").trim();

/** `12-19` (or `12–19`) → `SP 12`, `EP 19`; a single page or an article number is `SP` alone. */
function pageTags(pages: string): [string, string | null] {
  const range = /^\s*([^\s\-\u2013]+)\s*[-\u2013]+\s*([^\s\-\u2013]+)\s*$/.exec(pages);
  return range ? [range[1]!, range[2]!] : [pages, null];
}

/**
 * One record, CRLF line ends (as most databases write RIS), empty tags left out. The bibliographic
 * tags are those Zotero, EndNote and Covidence read for a journal article: `AU` (one per author),
 * `PY`, `T2` (journal), `VL`, `IS`, `SP`/`EP`, `DO`, `AN` with `DB`, `UR`, `KW`; the PMID in `C2`
 * (as Scopus writes it); the paper's id in `ID` and, for RevMan, in `NS`.
 */
export function risRecord(record: RisRecord): string {
  const lines: string[] = ["TY  - JOUR"];
  const tag = (name: string, value: string | number | null | undefined) => {
    const text = oneLine(String(value ?? ""));
    if (text) lines.push(`${name}  - ${text}`);
  };
  const bib = record.bibliography ?? {};
  tag("ID", record.id);
  tag("TI", record.title);
  for (const author of bib.authors ?? []) tag("AU", author);
  tag("PY", bib.year);
  tag("T2", bib.journal);
  tag("VL", bib.volume);
  tag("IS", bib.issue);
  if (bib.pages) {
    const [start, end] = pageTags(bib.pages);
    tag("SP", start);
    tag("EP", end);
  }
  tag("DO", bib.doi);
  tag("AN", bib.accession);
  tag("DB", bib.database);
  tag("C2", bib.pmid);
  tag("UR", bib.url);
  tag("NS", record.id);
  tag("AB", record.abstract);
  for (const keyword of bib.keywords ?? []) tag("KW", keyword);
  for (const keyword of record.keywords) tag("KW", keyword);
  for (const note of record.notes) tag("N1", note);
  lines.push("ER  - ", "");
  return lines.join("\r\n");
}
