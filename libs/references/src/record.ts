/** The formats the import reads; `medline` is PubMed's NBIB/MEDLINE tagged text. */
export type ReferenceFormat = "ris" | "medline" | "csv";

/** One reference as a format reader found it, before ids are made unique across files. */
export interface SourceReference {
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
