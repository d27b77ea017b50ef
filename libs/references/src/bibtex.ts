import { plugins } from "@citation-js/core";
import "@citation-js/plugin-bibtex";
import { normaliseDoi, normalisePmid, ReferenceImportError, yearOf, type SourceReference } from "./record";
import { cleanText } from "./text";

/**
 * BibTeX (and BibLaTeX) through citation-js's BibTeX reader (@citation-js/plugin-bibtex): LaTeX
 * accents and commands become Unicode and HTML (`{\"u}` → ü, `\textit{x}` → `<i>x</i>`, which the
 * one cleaning removes), `and`-separated names become family and given names. Fields are read from
 * its CSL-JSON: BibTeX has no accession field, so the entry's key is the record's id.
 */

interface CslName {
  family?: string;
  given?: string;
  literal?: string;
}
interface CslItem {
  id?: string;
  "citation-key"?: string;
  title?: string;
  abstract?: string;
  DOI?: string;
  PMID?: string;
  author?: CslName[];
  issued?: { "date-parts"?: (number | string)[][]; literal?: string; raw?: string };
  "container-title"?: string;
  volume?: string | number;
  issue?: string | number;
  page?: string;
  URL?: string;
  keyword?: string;
}

/** Whether the text holds a BibTeX entry (`@article{`, `@inproceedings (`). */
export const looksLikeBibtex = (head: string) => /^\s*@[A-Za-z]+\s*[{(]/m.test(head);

const nameOf = (name: CslName) => name.literal ?? [name.family, name.given].filter(Boolean).join(", ");
const stringOf = (value: string | number | undefined) => (value === undefined || value === "" ? null : String(value).trim() || null);

export function bibtexReferences(text: string, file = "BibTeX"): SourceReference[] {
  let items: CslItem[];
  try {
    items = plugins.input.chain(text.replace(/^\uFEFF/, ""), { target: "@csl/list+object", generateGraph: false }) as CslItem[];
  } catch (error) {
    throw new ReferenceImportError(file, `not readable as BibTeX (${error instanceof Error ? error.message : String(error)})`);
  }
  return items.map((item) => {
    const issued = item.issued?.["date-parts"]?.[0]?.[0];
    const keywords = item.keyword ?? "";
    return {
      sourceId: item["citation-key"] ?? item.id ?? null,
      title: cleanText(item.title),
      abstract: cleanText(item.abstract),
      doi: normaliseDoi(item.DOI),
      pmid: normalisePmid(item.PMID),
      included: null,
      authors: (item.author ?? []).map(nameOf).filter(Boolean),
      year: yearOf(issued === undefined ? (item.issued?.literal ?? item.issued?.raw) : String(issued)),
      journal: cleanText(item["container-title"]) || null,
      volume: stringOf(item.volume),
      issue: stringOf(item.issue),
      pages: stringOf(item.page),
      accession: null,
      database: null,
      url: stringOf(item.URL),
      // Zotero and JabRef separate keywords with commas, others with semicolons.
      keywords: keywords
        .split(keywords.includes(";") ? ";" : ",")
        .map((k) => k.trim())
        .filter(Boolean),
    };
  });
}
