/**
 * Writes the import fixtures in libs/references/fixtures/ from the CC0 records in data/: the same
 * titles and abstracts laid out as PubMed, Ovid/Embase and Scopus would export them as RIS, as a
 * PubMed NBIB file, a semicolon CSV saved by Excel, a Web of Science plain-text export, a Zotero
 * BibTeX file and an EndNote XML export, with made-up bibliographic fields (authors with non-ASCII
 * names, years, journals, volumes, issues, pages, keywords), each with a few planted duplicates, and
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

/**
 * Made-up bibliographic fields for record `i` of a fixture (the sources carry none): two or three
 * authors from a pool of names with non-ASCII letters, a year, a journal, volume, issue, pages and
 * keywords, the same for the same `i`, so that the exports' round trip has every field to keep.
 */
const SURNAMES = ["Müller", "Ødegård", "García-López", "Nguyễn", "O'Brien", "Kowalczyk", "Çelik", "Smith", "Dvořák", "Ó Súilleabháin", "Jääskeläinen", "Zhang"];
const GIVEN = ["Zoë", "Åse", "José", "Văn An", "Siobhán", "Łukasz", "Ayşe", "Jane", "Jiří", "Seán", "Päivi", "Wei"];
const JOURNALS = ["BMJ Open", "The Lancet", "JAMA Internal Medicine", "Clinical Pharmacokinetics", "Neuroscience & Biobehavioral Reviews", "PLOS ONE"];
const TOPICS = ["randomised controlled trial", "nudge", "prescribing", "pharmacokinetics", "memory", "hormone therapy", "guideline adherence"];
interface Bib {
  authors: string[];
  initials: string[];
  year: number;
  journal: string;
  volume: string;
  issue: string;
  first: number;
  last: number;
  keywords: string[];
}
function bib(i: number): Bib {
  const count = 2 + (i % 2);
  const people = Array.from({ length: count }, (_, k) => [(i * 5 + k * 7) % SURNAMES.length, (i * 3 + k * 5) % GIVEN.length] as const);
  const first = 10 + ((i * 37) % 900);
  return {
    authors: people.map(([s, g]) => `${SURNAMES[s]!}, ${GIVEN[g]!}`),
    initials: people.map(([s, g]) => `${SURNAMES[s]!} ${GIVEN[g]!.split(/\s+/).map((part) => part[0]).join("")}`),
    year: 1995 + (i % 29),
    journal: JOURNALS[i % JOURNALS.length]!,
    volume: String(10 + (i % 90)),
    issue: String(1 + (i % 12)),
    first,
    last: first + 3 + (i % 20),
    keywords: [TOPICS[i % TOPICS.length]!, TOPICS[(i + 3) % TOPICS.length]!],
  };
}

/** The made-up fields as RIS lines, in the new tag set (`AU`, `PY`, `T2`) or Ovid's old one (`A1`, `Y1` as `2020//`, `JF`). */
const risBibliography = (b: Bib, tags: "new" | "old" = "new") => [
  ...b.authors.map((a) => `${tags === "old" ? "A1" : "AU"}  - ${a}`),
  tags === "old" ? `Y1  - ${b.year}//` : `PY  - ${b.year}`,
  `${tags === "old" ? "JF" : "T2"}  - ${b.journal}`,
  `VL  - ${b.volume}`,
  `IS  - ${b.issue}`,
  `SP  - ${b.first}`,
  `EP  - ${b.last}`,
  ...b.keywords.map((k) => `KW  - ${k}`),
];

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
  const withPmid = records.map((r, i) => ({ ...r, pmid: pmid(i), bib: bib(i) }));
  const { rows, duplicates } = plant(withPmid, [3, 100, 250], (r) => r); // the same PMID from a second search
  const text = rows
    .map((r) =>
      [
        "TY  - JOUR",
        "DB  - PubMed",
        `AN  - ${r.pmid}`,
        r.title && `TI  - ${flat(r.title)}`,
        ...risBibliography(r.bib),
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
    records.map((r, i) => ({ ...r, db: "Embase", an: String(620000000 + i * 113), bib: bib(i + 1000) })),
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
        ...risBibliography(r.bib, "old"),
        ...(r.abstract ? wrap(r.abstract, 74).map((line, i) => (i === 0 ? `N2  - ${line}` : line)) : []),
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
    records.map((r, i) => ({ ...r, eid: `2-s2.0-${84000000000 + i * 7919}`, bib: bib(i + 2000) })),
    [5, 77, 190],
    (r, n) => ({ ...r, doi: null, eid: `2-s2.0-${85900000000 + n}`, title: flat(r.title).toLowerCase() }),
  );
  const text = rows
    .map((r) =>
      [
        "TY  - JOUR",
        r.title && `TI  - ${flat(r.title)}`,
        ...risBibliography(r.bib),
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
  const records = all.slice(0, 200).map((r, i) => ({ ...r, bib: bib(i + 3000) }));
  const { rows, duplicates } = plant(records, [20, 150], (r) => r);
  const tagged = (tag: string, value: string) => wrap(value, 82).map((line, i) => (i === 0 ? `${tag.padEnd(4)}- ${line}` : `      ${line}`));
  const text = rows
    .map((r) =>
      [
        `PMID- ${10000000 + Number(r.id)}`,
        "OWN - NLM",
        "STAT- MEDLINE",
        `DP  - ${r.bib.year} Mar`,
        ...(r.title ? tagged("TI", r.title) : []),
        ...(r.abstract ? tagged("AB", r.abstract) : []),
        ...r.bib.authors.flatMap((a, k) => [`FAU - ${a}`, `AU  - ${r.bib.initials[k]!}`]),
        `JT  - ${r.bib.journal}`,
        `VI  - ${r.bib.volume}`,
        `IP  - ${r.bib.issue}`,
        `PG  - ${r.bib.first}-${r.bib.last}`,
        ...r.bib.keywords.map((k) => `OT  - ${k}`),
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
    records.map((r, i) => ({ ...r, recordId: r.id, bib: bib(i + 4000) })),
    [8, 99],
    (r, n) => ({ ...r, recordId: String(90001 + n) }),
  );
  const cell = (value: string) => (/[;"\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const lines = [
    "record_id;title;abstract;authors;year;journal;label_included",
    ...rows.map((r) => [r.recordId, flat(r.title), flat(r.abstract), r.bib.authors.join("; "), String(r.bib.year), r.bib.journal, r.included ? "1" : "0"].map(cell).join(";")),
  ];
  writeFileSync(join(OUT, "asreview-semicolon.csv"), `\uFEFF${lines.join("\r\n")}\r\n`);
  manifest["asreview-semicolon.csv"] = { source: "data/nagtegaal_2019.csv.gz", records: rows.map((r) => r.id), duplicates };
}

// Web of Science plain text: FN/VR header, two-letter tags, continuation lines indented by three
// spaces (one author a line in AU and AF), UT the accession; planted: two records again from a
// second export with the same UT and DOI.
{
  const records = synergy("Nelson_2002").slice(100, 300).map((r, i) => ({ ...r, ut: `WOS:${String(100000000000 + i * 7717).padStart(15, "0")}`, bib: bib(i + 5000) }));
  const { rows, duplicates } = plant(records, [12, 140], (r) => r);
  const tagged = (tag: string, lines: string[]) => lines.map((line, i) => (i === 0 ? `${tag} ${line}` : `   ${line}`));
  const text = [
    "FN Clarivate Analytics Web of Science",
    "VR 1.0",
    ...rows.map((r) =>
      [
        "PT J",
        ...tagged("AU", r.bib.initials.map((a) => a.replace(" ", ", "))),
        ...tagged("AF", r.bib.authors),
        ...(r.title ? tagged("TI", wrap(r.title, 70)) : []),
        `SO ${r.bib.journal.toUpperCase()}`,
        "LA English",
        "DT Article",
        `DE ${r.bib.keywords.join("; ")}`,
        ...(r.abstract ? tagged("AB", wrap(r.abstract, 70)) : []),
        `PY ${r.bib.year}`,
        `VL ${r.bib.volume}`,
        `IS ${r.bib.issue}`,
        `BP ${r.bib.first}`,
        `EP ${r.bib.last}`,
        r.doi && `DI ${r.doi}`,
        `UT ${r.ut}`,
        "ER",
        "",
      ]
        .filter(Boolean)
        .join("\n"),
    ),
    "EF",
    "",
  ].join("\n");
  writeFileSync(join(OUT, "wos-savedrecs.txt"), `\uFEFF${text}`);
  manifest["wos-savedrecs.txt"] = { source: "data/synergy/Nelson_2002.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

/** Text as a BibTeX value: LaTeX's special characters escaped (Unicode is written as it is, as biblatex and Zotero do). */
const latex = (text: string) =>
  flat(text).replace(/[\\{}&%$#_~^]/g, (c) => ({ "\\": "\\textbackslash{}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}" })[c] ?? `\\${c}`);

// BibTeX as Zotero exports it: one @article per record, the key from the first author and year,
// titles in double braces (case kept), `and` between authors; planted: two entries again under
// another key with the same DOI.
{
  const records = synergy("Sep_2021").slice(0, 200).map((r, i) => ({ ...r, key: `ref${i + 1}`, bib: bib(i + 6000) }));
  const { rows, duplicates } = plant(records, [30, 170], (r, n) => ({ ...r, key: `ref-copy${n + 1}` }));
  const text = rows
    .map((r) =>
      [
        `@article{${r.key},`,
        r.title && `  title = {{${latex(r.title)}}},`,
        `  author = {${r.bib.authors.map(latex).join(" and ")}},`,
        `  journal = {${latex(r.bib.journal)}},`,
        `  year = {${r.bib.year}},`,
        `  volume = {${r.bib.volume}},`,
        `  number = {${r.bib.issue}},`,
        `  pages = {${r.bib.first}--${r.bib.last}},`,
        r.doi && `  doi = {${latex(r.doi)}},`,
        `  keywords = {${r.bib.keywords.join(", ")}},`,
        r.abstract && `  abstract = {${latex(r.abstract)}},`,
        "}",
        "",
      ]
        .filter(Boolean)
        .join("\n"),
    )
    .join("\n");
  writeFileSync(join(OUT, "zotero.bib"), text);
  manifest["zotero.bib"] = { source: "data/synergy/Sep_2021.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

/** Text as XML character data. */
const xml = (text: string) => flat(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/** An EndNote XML value: the text inside a style element, as EndNote writes every value. */
const styled = (tag: string, text: string) => `<${tag}><style face="normal" font="default" size="100%">${xml(text)}</style></${tag}>`;

// EndNote XML (File → Export → XML): every value inside a <style>, the DOI in electronic-resource-num,
// the accession in accession-num; planted: two records again with the same DOI under a new number.
{
  const records = synergy("Donners_2021").slice(0, 200).map((r, i) => ({ ...r, an: String(630000000 + i * 101), bib: bib(i + 7000) }));
  const { rows, duplicates } = plant(records, [40, 160], (r, n) => ({ ...r, an: String(639000000 + n) }));
  const body = rows
    .map((r, i) =>
      [
        "<record>",
        '<database name="Review.enl" path="C:\\Users\\team\\Review.enl">Review.enl</database>',
        '<source-app name="EndNote" version="21.0">EndNote</source-app>',
        `<rec-number>${i + 1}</rec-number>`,
        '<ref-type name="Journal Article">17</ref-type>',
        `<contributors><authors>${r.bib.authors.map((a) => styled("author", a)).join("")}</authors></contributors>`,
        `<titles>${r.title ? styled("title", r.title) : ""}${styled("secondary-title", r.bib.journal)}</titles>`,
        `<periodical>${styled("full-title", r.bib.journal)}</periodical>`,
        styled("pages", `${r.bib.first}-${r.bib.last}`),
        styled("volume", r.bib.volume),
        styled("number", r.bib.issue),
        `<keywords>${r.bib.keywords.map((k) => styled("keyword", k)).join("")}</keywords>`,
        `<dates>${styled("year", String(r.bib.year))}</dates>`,
        styled("accession-num", r.an),
        r.doi ? styled("electronic-resource-num", r.doi) : "",
        r.abstract ? styled("abstract", r.abstract) : "",
        styled("remote-database-name", "Embase"),
        "</record>",
      ].join(""),
    )
    .join("");
  writeFileSync(join(OUT, "endnote.xml"), `<?xml version="1.0" encoding="UTF-8" ?><xml><records>${body}</records></xml>\n`);
  manifest["endnote.xml"] = { source: "data/synergy/Donners_2021.jsonl.gz", records: rows.map((r) => r.id), duplicates };
}

writeFileSync(join(OUT, "manifest.json"), `${JSON.stringify(manifest, null, 1)}\n`);
