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
  const records: ImportedRecord[] = [];
  const taken = new Set<string>();
  const unique = (wanted: string, stem: string) => {
    let id = wanted.slice(0, MAX_ID_CHARS);
    if (taken.has(id)) id = `${stem}:${wanted}`.slice(0, MAX_ID_CHARS - 8);
    for (let n = 2; taken.has(id); n++) id = `${id.replace(/#\d+$/, "")}#${n}`;
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
  }
  const duplicates = findDuplicates(records);
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
