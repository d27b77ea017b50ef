/**
 * The formats the import reads; `medline` is PubMed's NBIB/MEDLINE tagged text, `wos` Web of
 * Science's plain-text export, `endnote-xml` EndNote's XML export.
 */
export type ReferenceFormat = "ris" | "medline" | "csv" | "wos" | "bibtex" | "endnote-xml";

/**
 * The bibliographic fields a reference came with, as the source wrote them (empty when it had none):
 * they travel with the paper into a job and come back in its exports, so the decisions can be matched
 * to the team's library. Never used for screening.
 */
export interface ReferenceBibliography {
  /** In order, as written (`Doe, Jane`). */
  authors: string[];
  year: string | null;
  /** Journal or other secondary title. */
  journal: string | null;
  volume: string | null;
  issue: string | null;
  /** `12-19`, or the first page alone. */
  pages: string | null;
  /** The database's accession number (Embase, Web of Science, a Scopus EID); a PubMed accession is the `pmid`. */
  accession: string | null;
  database: string | null;
  url: string | null;
  keywords: string[];
}

/** One reference as a format reader found it, before ids are made unique across files. */
export interface SourceReference extends ReferenceBibliography {
  /** The source's own id: a PMID, a database accession, a Scopus EID, a tool's record id; null when it has none. */
  sourceId: string | null;
  title: string;
  abstract: string;
  /** Bare and lower-case (`10.1136/bmj.k1`), null when the record has none. */
  doi: string | null;
  pmid: string | null;
  /** A label the file carried (ASReview's `label_included`); null when unlabelled. */
  included: boolean | null;
}

/** A reference as imported: an id unique across every file of the import, and where it came from. */
export interface ImportedRecord extends SourceReference {
  id: string;
  origin: { file: string; format: ReferenceFormat; /** 0-based position in its file. */ index: number };
}

/** What the import reads, for messages that refuse a file. */
export const ACCEPTED_FORMATS =
  "RIS (.ris), PubMed NBIB/MEDLINE (.nbib), Web of Science plain text (.txt), BibTeX (.bib), EndNote XML (.xml), or CSV (.csv, .tsv) with a title column";

/** A file the import cannot read; names the file and, where it can, the line or row. */
export class ReferenceImportError extends Error {
  override readonly name = "ReferenceImportError";
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}

/** `10.1/X`, `doi:10.1/x`, `https://doi.org/10.1/x`, `http://dx.doi.org/10.1/x.` → `10.1/x`; null when no DOI is there. */
export function normaliseDoi(value: string | null | undefined): string | null {
  const match = /10\.\d{4,9}\/\S+/.exec(decodeDoiUrl(value ?? ""));
  return match ? match[0].replace(/[.,;]+$/, "").toLowerCase() : null;
}

function decodeDoiUrl(value: string): string {
  if (!/%2f/i.test(value)) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** A PMID is 1–9 digits (`PMID: 123`, `pmid:123` accepted); anything else is not one. */
export function normalisePmid(value: string | null | undefined): string | null {
  const match = /^(?:pmid:?\s*)?(\d{1,9})$/i.exec((value ?? "").trim());
  return match ? match[1]!.replace(/^0+(?=\d)/, "") : null;
}

/** `2018//`, `2018/05/01/`, `2015 Mar` → `2018`, `2015`: the year, or the value as written when it holds none. */
export function yearOf(value: string | null | undefined): string | null {
  const text = (value ?? "").trim();
  if (!text) return null;
  return /(?<!\d)(\d{4})(?!\d)/.exec(text)?.[1] ?? text;
}

/** Databases whose accession number is the PubMed id. */
export const PUBMED_DATABASE = /pubmed|medline|\bnlm\b/i;
