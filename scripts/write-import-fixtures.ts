/**
 * Writes the import fixtures in libs/references/fixtures/ from the CC0 records in data/: the same
 * titles and abstracts laid out as PubMed, Ovid/Embase and Scopus would export them as RIS, as a
 * PubMed NBIB file and as a semicolon CSV saved by Excel, each with a few planted duplicates, and
 * manifest.json saying which source record each fixture record is and which records are duplicates.
 * Run again only to change the fixtures: `pnpm exec tsx scripts/write-import-fixtures.ts`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { parseCsvRows } from "@litrev/references";

const ROOT = resolve(import.meta.dirname, "..");
const OUT = join(ROOT, "libs/references/fixtures");

interface Source {
  id: string;
  title: string;
  abstract: string;
  doi: string | null;
  included: boolean;
}

const gunzip = (path: string) => gunzipSync(readFileSync(join(ROOT, path))).toString("utf8");
const synergy = (name: string): Source[] =>
  gunzip(`data/synergy/${name}.jsonl.gz`)
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as Source);
function nagtegaal(): Source[] {
  const [header, ...rows] = parseCsvRows(gunzip("data/nagtegaal_2019.csv.gz"));
  const col = (name: string) => header!.indexOf(name);
  return rows.map((row) => ({ id: row[col("record_id")]!, title: row[col("title")]!, abstract: row[col("abstract")]!, doi: null, included: row[col("label_included")] === "1" }));
}

/** Whitespace as an exporter writes it: one line per value. */
const flat = (text: string) => text.replace(/\s+/g, " ").trim();
/** Wraps at spaces, as Ovid and PubMed wrap long values. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of flat(text).split(" ")) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** One fixture: its records' source ids in file order, and the duplicate groups as positions in the file. */
interface Manifest {
  source: string;
  records: string[];
  duplicates: number[][];
}
const manifest: Record<string, Manifest> = {};

/** Appends copies of records `picks` (positions) at the end, each a planted duplicate of its original. */
function plant<T>(records: T[], picks: number[], change: (record: T, n: number) => T): { rows: T[]; duplicates: number[][] } {
  const rows = [...records];
  const duplicates = picks.map((at, n) => {
    rows.push(change(records[at]!, n));
    return [at, rows.length - 1];
  });
  return { rows, duplicates };
}

// PubMed as a reference manager saves a PubMed search as RIS: one line per value, AN the PMID.
{
  const records = synergy("Sep_2021");
  const pmid = (i: number) => String(21000000 + i * 37);
  const withPmid = records.map((r, i) => ({ ...r, pmid: pmid(i) }));
  const { rows, duplicates } = plant(withPmid, [3, 100, 250], (r) => r); // the same PMID from a second search
  const text = rows
    .map((r) =>
      [
        "TY  - JOUR",
        "DB  - PubMed",
        `AN  - ${r.pmid}`,
        r.title && `TI  - ${flat(r.title)}`,
        "LA  - eng",
        r.abstract && `AB  - ${flat(r.abstract)}`,
        r.doi && `DO  - ${r.doi}`,
        `UR  - https://pubmed.ncbi.nlm.nih.gov/${r.pmid}/`,
        "ER  - ",
        "",
      ]
        .filter(Boolean)
        .join("\n"),
    )
    .join("\n");
  writeFileSync(join(OUT, "pubmed.ris"), text);
  manifest["pubmed.ris"] = { source: "data/synergy/Sep_2021.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

// Ovid (Embase) RIS: byte-order mark, CRLF, old tags (T1, A1, Y1, N2, JF), the abstract wrapped over
// lines, the DOI as a dx.doi.org link; the planted duplicates are the MEDLINE copies a multi-database
// search returns (another database, the PMID as accession, the title in other case and punctuation).
{
  const records = synergy("Donners_2021");
  const { rows, duplicates } = plant(
    records.map((r, i) => ({ ...r, db: "Embase", an: String(620000000 + i * 113) })),
    [10, 120, 200],
    (r, n) => ({ ...r, db: "Ovid MEDLINE(R)", an: String(32000000 + n), title: `${flat(r.title).toUpperCase()}.` }),
  );
  const text = rows
    .map((r) =>
      [
        "TY  - JOUR",
        `DB  - ${r.db}`,
        `AN  - ${r.an}`,
        r.title && `T1  - ${flat(r.title)}`,
        "A1  - Anonymous",
        "Y1  - 2020//",
        ...(r.abstract ? wrap(r.abstract, 74).map((line, i) => (i === 0 ? `N2  - ${line}` : line)) : []),
        "JF  - Clinical Pharmacokinetics",
        r.doi && `DO  - http://dx.doi.org/${r.doi}`,
        `UR  - http://ovidsp.ovid.com/ovidweb.cgi?T=JS&PAGE=reference&D=emexb&NEWS=N&AN=${r.an}`,
        "ER  - ",
        "",
      ]
        .filter(Boolean)
        .join("\r\n"),
    )
    .join("\r\n");
  writeFileSync(join(OUT, "ovid-embase.ris"), `\uFEFF${text}`);
  manifest["ovid-embase.ris"] = { source: "data/synergy/Donners_2021.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

// Scopus RIS: new tags, the EID in the URL, export notes; the planted duplicates come from another
// export without a DOI and with the title in other case, found by title alone.
{
  const records = synergy("Nelson_2002").slice(0, 250);
  const { rows, duplicates } = plant(
    records.map((r, i) => ({ ...r, eid: `2-s2.0-${84000000000 + i * 7919}` })),
    [5, 77, 190],
    (r, n) => ({ ...r, doi: null, eid: `2-s2.0-${85900000000 + n}`, title: flat(r.title).toLowerCase() }),
  );
  const text = rows
    .map((r) =>
      [
        "TY  - JOUR",
        r.title && `TI  - ${flat(r.title)}`,
        "PY  - 2002",
        "T2  - JAMA",
        r.doi && `DO  - ${r.doi}`,
        `UR  - https://www.scopus.com/inward/record.uri?eid=${r.eid}${r.doi ? `&doi=${encodeURIComponent(r.doi)}` : ""}&partnerID=40&md5=0`,
        r.abstract && `AB  - ${flat(r.abstract)}`,
        "LA  - English",
        "M3  - Article",
        "DB  - Scopus",
        "N1  - Export Date: 26 November 2026; Cited By: 12",
        "ER  - ",
        "",
      ]
        .filter(Boolean)
        .join("\n"),
    )
    .join("\n");
  writeFileSync(join(OUT, "scopus.ris"), text);
  manifest["scopus.ris"] = { source: "data/synergy/Nelson_2002.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

const all = nagtegaal();

// PubMed's own export (NBIB/MEDLINE): four-letter tags, values wrapped at 88 characters onto lines
// indented by six spaces, other tags (FAU, MH, PT) between; planted: the same PMID twice.
{
  const records = all.slice(0, 200);
  const { rows, duplicates } = plant(records, [20, 150], (r) => r);
  const tagged = (tag: string, value: string) => wrap(value, 82).map((line, i) => (i === 0 ? `${tag.padEnd(4)}- ${line}` : `      ${line}`));
  const text = rows
    .map((r) =>
      [
        `PMID- ${10000000 + Number(r.id)}`,
        "OWN - NLM",
        "STAT- MEDLINE",
        "DP  - 2015 Mar",
        ...(r.title ? tagged("TI", r.title) : []),
        ...(r.abstract ? tagged("AB", r.abstract) : []),
        "FAU - Anonymous",
        "PT  - Journal Article",
        "MH  - Evidence-Based Medicine",
        "SO  - Journal. 2015 Mar;1(1):1-10.",
        "",
      ].join("\n"),
    )
    .join("\n");
  writeFileSync(join(OUT, "pubmed.nbib"), text);
  manifest["pubmed.nbib"] = { source: "data/nagtegaal_2019.csv.gz", records: rows.map((r) => r.id), duplicates };
}

// A semicolon CSV as Excel saves it where the decimal mark is a comma: byte-order mark, CRLF, ASReview's
// columns; planted: two rows again under a new record_id, and two records that pubmed.nbib holds too.
{
  const records = [...all.slice(200, 400), all[5]!, all[6]!];
  const { rows, duplicates } = plant(
    records.map((r) => ({ ...r, recordId: r.id })),
    [8, 99],
    (r, n) => ({ ...r, recordId: String(90001 + n) }),
  );
  const cell = (value: string) => (/[;"\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const lines = ["record_id;title;abstract;label_included", ...rows.map((r) => [r.recordId, flat(r.title), flat(r.abstract), r.included ? "1" : "0"].map(cell).join(";"))];
  writeFileSync(join(OUT, "asreview-semicolon.csv"), `\uFEFF${lines.join("\r\n")}\r\n`);
  manifest["asreview-semicolon.csv"] = { source: "data/nagtegaal_2019.csv.gz", records: rows.map((r) => r.id), duplicates };
}

writeFileSync(join(OUT, "manifest.json"), `${JSON.stringify(manifest, null, 1)}\n`);
