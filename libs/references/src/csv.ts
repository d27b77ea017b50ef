import Papa from "papaparse";
import { normaliseDoi, normalisePmid, ReferenceImportError, type SourceReference } from "./record";
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
} as const;

const INCLUDED = new Set(["1", "true", "yes", "included", "include"]);
const EXCLUDED = new Set(["0", "false", "no", "excluded", "exclude", "-1"]);

export function csvReferences(text: string, file = "CSV"): SourceReference[] {
  const [header, ...rows] = parseCsvRows(text, { file });
  if (!header) return [];
  const keys = header.map(headerKey);
  const column = (names: readonly string[]) => names.map((name) => keys.indexOf(headerKey(name))).find((index) => index >= 0) ?? -1;
  const at = (row: string[], index: number) => (index >= 0 ? (row[index] ?? "").trim() : "");
  const [id, title, abstract, doi, pmid, label] = [column(CSV_COLUMNS.id), column(CSV_COLUMNS.title), column(CSV_COLUMNS.abstract), column(CSV_COLUMNS.doi), column(CSV_COLUMNS.pmid), column(CSV_COLUMNS.label)];
  if (title < 0) throw new ReferenceImportError(file, `no title column (looked for ${CSV_COLUMNS.title.join(", ")}); found ${header.join(", ")}`);
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
    };
  });
}
