/**
 * Reference import: RIS (PubMed, Embase/Ovid, Scopus, Web of Science), PubMed NBIB/MEDLINE, Web of
 * Science plain text, BibTeX, EndNote XML and CSV (comma or semicolon; ASReview, Rayyan and Covidence
 * columns) into screening paper records with their bibliographic fields, with
 * duplicates found by DOI, PMID and title. Pure functions over strings: no file system, so the
 * console can run it in the browser and `npm run import` and `npm run eval` in Node (which read files
 * through `@litrev/references/node`).
 */
export { importReferences, detectFormat, MAX_IMPORT_BYTES, type ReferenceFile, type ImportOptions, type ImportProgress, type ImportResult } from "./import";
export { findDuplicates, mergeDuplicates, normaliseTitle, keyIndex, type DuplicateGroup, type DuplicateKey } from "./duplicates";
export { ACCEPTED_FORMATS, ReferenceImportError, normaliseDoi, normalisePmid, type ImportedRecord, type ReferenceBibliography, type ReferenceFormat, type SourceReference } from "./record";
export { toScreeningPaper, toIndexerRecord, paperBibliography } from "./papers";
export { parseCsvRows, CSV_COLUMNS } from "./csv";
export { medlineToRis } from "./medline";
export { risTagRecords } from "./ris";
export { wosTagRecords } from "./wos";
export { stripHtml, cleanText, decodeReferenceBytes } from "./text";
