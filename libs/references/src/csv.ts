import Papa from "papaparse";
import { ACCEPTED_FORMATS, normaliseDoi, normalisePmid, ReferenceImportError, yearOf, type SourceReference } from "./record";
import { cleanText } from "./text";

/**
 * CSV through papaparse: RFC 4180 quoting (commas, quotes and line breaks inside cells), a byte-order
 * mark, and the delimiter detected, since Excel saves with a semicolon wherever the decimal mark is
 * a comma. Columns are found by the names ASReview, Rayyan and Covidence export.
 */

/** Rows of cells; the delimiter (comma, semicolon or tab) is detected unless given. Throws on a quote left open. */
export function parseCsvRows(text: string, options: { file?: string; delimiter?: "," | ";" | "\t" } = {}): string[][] {
  const file = options.file ?? "CSV";
  const result = Papa.parse<string[]>(text.replace(/^\uFEFF/, ""), { delimiter: options.delimiter ?? "", delimitersToGuess: [",", ";", "\t"], skipEmptyLines: "greedy" });
  const fatal = result.errors.find((error) => error.type === "Quotes");
  if (fatal) throw new ReferenceImportError(file, `row ${(fatal.row ?? 0) + 1}: ${fatal.message}`);
  return result.data;
}

/** Header names as compared: lower case, letters and digits only (`Covidence #` → `covidence`, `label_included` → `labelincluded`). */
const headerKey = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");

/** Column names per field, most specific first. ASReview: record_id, label_included; Rayyan: key; Covidence: Covidence #, Accession Number. */
export const CSV_COLUMNS = {
  id: ["record_id", "id", "key", "Covidence #", "Ref", "Accession Number", "PMID", "pubmed_id"],
  title: ["title", "Article Title", "Document Title", "primary_title"],
  abstract: ["abstract", "Abstract Note", "AB"],
  doi: ["doi"],
  pmid: ["pmid", "pubmed_id", "PubMed ID"],
  label: ["label_included", "included", "asreview_label"],
  authors: ["authors", "author", "AU"],
  year: ["year", "Published Year", "publication_year", "PY"],
  journal: ["journal", "secondary_title", "Source title", "Journal/Book", "Source"],
  volume: ["volume", "VL"],
  issue: ["issue", "number", "IS"],
  pages: ["pages", "Page range", "SP"],
  accession: ["accession", "Accession Number", "AN"],
  database: ["database", "DB"],
  url: ["url", "Link", "UR"],
  keywords: ["keywords", "Author Keywords", "KW"],
} as const;

/** A list cell (`Doe, J.; Roe, R.`): split at semicolons (commas separate a surname from the initials). */
const listCell = (text: string) => text.split(";").map((part) => part.trim()).filter(Boolean);

const INCLUDED = new Set(["1", "true", "yes", "included", "include"]);
const EXCLUDED = new Set(["0", "false", "no", "excluded", "exclude", "-1"]);

export function csvReferences(text: string, file = "CSV"): SourceReference[] {
  const [header, ...rows] = parseCsvRows(text, { file });
  if (!header) return [];
  const keys = header.map(headerKey);
  const column = (names: readonly string[]) => names.map((name) => keys.indexOf(headerKey(name))).find((index) => index >= 0) ?? -1;
  const at = (row: string[], index: number) => (index >= 0 ? (row[index] ?? "").trim() : "");
  const [id, title, abstract, doi, pmid, label] = [column(CSV_COLUMNS.id), column(CSV_COLUMNS.title), column(CSV_COLUMNS.abstract), column(CSV_COLUMNS.doi), column(CSV_COLUMNS.pmid), column(CSV_COLUMNS.label)];
  const bib = {
    authors: column(CSV_COLUMNS.authors),
    year: column(CSV_COLUMNS.year),
    journal: column(CSV_COLUMNS.journal),
    volume: column(CSV_COLUMNS.volume),
    issue: column(CSV_COLUMNS.issue),
    pages: column(CSV_COLUMNS.pages),
    accession: column(CSV_COLUMNS.accession),
    database: column(CSV_COLUMNS.database),
    url: column(CSV_COLUMNS.url),
    keywords: column(CSV_COLUMNS.keywords),
  };
  if (title < 0) throw new ReferenceImportError(file, `read as CSV, but it has no title column (looked for ${CSV_COLUMNS.title.join(", ")}; found ${header.slice(0, 20).join(", ")}); the import reads ${ACCEPTED_FORMATS}`);
  return rows.map((row, i) => {
    const labelText = at(row, label).toLowerCase();
    if (labelText && !INCLUDED.has(labelText) && !EXCLUDED.has(labelText)) {
      throw new ReferenceImportError(file, `row ${i + 2}: ${header[label]} is "${at(row, label)}", expected 1 or 0 (or empty: unlabelled)`);
    }
    return {
      sourceId: at(row, id).replace(/^#/, "") || null,
      title: cleanText(at(row, title)),
      abstract: cleanText(at(row, abstract)),
      doi: normaliseDoi(at(row, doi)),
      pmid: normalisePmid(at(row, pmid)),
      included: labelText ? INCLUDED.has(labelText) : null,
      authors: listCell(at(row, bib.authors)),
      year: yearOf(at(row, bib.year)),
      journal: cleanText(at(row, bib.journal)) || null,
      volume: at(row, bib.volume) || null,
      issue: at(row, bib.issue) || null,
      pages: at(row, bib.pages) || null,
      accession: at(row, bib.accession) || null,
      database: at(row, bib.database) || null,
      url: at(row, bib.url) || null,
      keywords: listCell(at(row, bib.keywords)),
    };
  });
}
