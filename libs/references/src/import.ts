import { bibtexReferences, looksLikeBibtex } from "./bibtex";
import { csvReferences } from "./csv";
import { findDuplicates, mergeDuplicates, type DuplicateGroup } from "./duplicates";
import { medlineReferences } from "./medline";
import { ACCEPTED_FORMATS, ReferenceImportError, type ImportedRecord, type ReferenceFormat, type SourceReference } from "./record";
import { endnoteXmlReferences, looksLikeEndnoteXml } from "./endnote-xml";
import { risReferences } from "./ris";
import { looksLikeWos, wosReferences } from "./wos";

/** A file as text, with the name it was given (used for the format, error messages and made-up ids). */
export interface ReferenceFile {
  name: string;
  text: string;
}

export interface ImportOptions {
  /** Keep one record per duplicate group (see `mergeDuplicates`); otherwise duplicates are only reported. */
  mergeDuplicates?: boolean;
  /** Most records one import takes (default 1,000,000, the service's ceiling for a job). */
  maxRecords?: number;
  /** Most text one import takes, all files together (default MAX_IMPORT_BYTES), in UTF-16 units: never more than its UTF-8 bytes. */
  maxBytes?: number;
  /** Told after each file is read and when the duplicates are found (the console's progress bar). */
  onProgress?: (progress: ImportProgress) => void;
}

/** How far an import is: `done` of `total` files read, then the duplicate search. */
export interface ImportProgress {
  stage: "read" | "duplicates";
  done: number;
  total: number;
}

/**
 * Most reference text one import takes, and most bytes a gzipped file may decompress to: far above
 * the largest database export (about 1.5 KB a record, so some 170,000 records), and far below what
 * would exhaust a browser tab or the `npm run import` process (a 583 KB gzip bomb once took 1.84 GB).
 */
export const MAX_IMPORT_BYTES = 256 * 1024 * 1024;

const size = (bytes: number) => (bytes >= 1024 * 1024 ? `${Math.floor(bytes / 1024 / 1024)} MiB` : `${bytes} bytes`);

/** The cap's message, naming the file that went over it and what to do. */
export function tooLarge(file: string, what: string, maxBytes: number): ReferenceImportError {
  return new ReferenceImportError(file, `${what} more than ${size(maxBytes)}${what.startsWith("decompresses") ? "" : " of references in this import"} (the import's cap): split the references over several imports`);
}

export interface ImportResult {
  records: ImportedRecord[];
  files: { name: string; format: ReferenceFormat; records: number }[];
  /** Every duplicate group found, whether or not it was merged. */
  duplicates: DuplicateGroup[];
  merged: boolean;
  counts: {
    /** Records read from the files. */
    read: number;
    /** Records beyond the first of their duplicate group. */
    duplicates: number;
    /** Records returned (read less duplicates when merged). */
    records: number;
    withoutAbstract: number;
    withoutTitle: number;
  };
}

const MAX_ID_CHARS = 200;

/**
 * The format of a file: its content decides (`PMID- ` lines are MEDLINE, `TY  - ` lines RIS, `FN
 * Clarivate`/`PT J`…`UT WOS:` Web of Science, `@article{` BibTeX, `<xml><records>` EndNote XML); a
 * `.csv`/`.tsv` name or anything else is read as CSV. A file named for another format whose content
 * is none of them is refused with the formats accepted.
 */
export function detectFormat(file: ReferenceFile): ReferenceFormat {
  if (/\.(csv|tsv)$/i.test(file.name)) return "csv";
  const head = file.text.slice(0, 64 * 1024).replace(/^\uFEFF/, "");
  if (/^PMID- ?\d/m.test(head)) return "medline";
  if (/^TY {2}- ?/m.test(head)) return "ris";
  if (looksLikeWos(head)) return "wos";
  if (looksLikeEndnoteXml(head)) return "endnote-xml";
  if (looksLikeBibtex(head)) return "bibtex";
  if (/\.(ris|nbib|medline|bib|bibtex|xml|enw)$/i.test(file.name) || /^\s*</.test(head)) {
    throw new ReferenceImportError(file.name, `not a format the import reads; it reads ${ACCEPTED_FORMATS}`);
  }
  return "csv";
}

const READERS: Record<ReferenceFormat, (text: string, name: string) => SourceReference[]> = {
  ris: risReferences,
  medline: medlineReferences,
  csv: csvReferences,
  wos: wosReferences,
  bibtex: bibtexReferences,
  "endnote-xml": endnoteXmlReferences,
};

/** `refs/Embase export.ris` → `Embase-export`: the part of made-up ids that says which file. */
const stemOf = (name: string) =>
  name
    .replace(/^.*[\\/]/, "")
    .replace(/(\.[A-Za-z0-9]{1,8})+$/, "")
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .slice(0, 60) || "file";

/**
 * Reads every file and gives each record an id unique across the import: the source's own id (PMID,
 * accession, EID, a tool's record id) when it has one, else `<file>-<n>` (its position in the file).
 * An id already taken by an earlier record becomes `<file>:<id>`, then `<file>:<id>#2`, … so the
 * same files in the same order always give the same ids.
 */
export function importReferences(files: readonly ReferenceFile[], options: ImportOptions = {}): ImportResult {
  const maxRecords = options.maxRecords ?? 1_000_000;
  const maxBytes = options.maxBytes ?? MAX_IMPORT_BYTES;
  let bytes = 0;
  for (const file of files) {
    bytes += file.text.length;
    if (bytes > maxBytes) throw tooLarge(file.name, "with this file,", maxBytes);
  }
  const records: ImportedRecord[] = [];
  const taken = new Set<string>();
  // The next `#n` to try per id: records sharing one id cost one probe each, not one per earlier record.
  const nextSuffix = new Map<string, number>();
  const unique = (wanted: string, stem: string) => {
    let id = wanted.slice(0, MAX_ID_CHARS);
    if (taken.has(id)) id = `${stem}:${wanted}`.slice(0, MAX_ID_CHARS - 8);
    if (taken.has(id)) {
      const base = id.replace(/#\d+$/, "");
      let n = nextSuffix.get(base) ?? 2;
      while (taken.has(`${base}#${n}`)) n++;
      nextSuffix.set(base, n + 1);
      id = `${base}#${n}`;
    }
    taken.add(id);
    return id;
  };
  const summary: ImportResult["files"] = [];
  for (const file of files) {
    const format = detectFormat(file);
    const found = READERS[format](file.text, file.name);
    if (records.length + found.length > maxRecords) throw new ReferenceImportError(file.name, `more than ${maxRecords} records in this import`);
    const stem = stemOf(file.name);
    found.forEach((reference, index) => {
      records.push({ ...reference, id: unique(reference.sourceId ?? `${stem}-${index + 1}`, stem), origin: { file: file.name, format, index } });
    });
    summary.push({ name: file.name, format, records: found.length });
    options.onProgress?.({ stage: "read", done: summary.length, total: files.length });
  }
  const duplicates = findDuplicates(records);
  options.onProgress?.({ stage: "duplicates", done: files.length, total: files.length });
  const kept = options.mergeDuplicates ? mergeDuplicates(records, duplicates) : records;
  return {
    records: kept,
    files: summary,
    duplicates,
    merged: options.mergeDuplicates === true,
    counts: {
      read: records.length,
      duplicates: duplicates.reduce((sum, group) => sum + group.ids.length - 1, 0),
      records: kept.length,
      withoutAbstract: kept.filter((record) => !record.abstract).length,
      withoutTitle: kept.filter((record) => !record.title).length,
    },
  };
}
