import type { Bibliography, IndexerRecord, ScreeningPaper } from "@litrev/contracts";
import type { ImportedRecord } from "./record";

/** The record's bibliographic fields as a paper carries them: only those it has (none empty). */
export function paperBibliography(record: ImportedRecord): Bibliography {
  const fields: Bibliography = {
    authors: record.authors,
    year: record.year,
    journal: record.journal,
    volume: record.volume,
    issue: record.issue,
    pages: record.pages,
    doi: record.doi,
    pmid: record.pmid,
    accession: record.accession,
    database: record.database,
    url: record.url,
    keywords: record.keywords,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null && value !== undefined && value !== "" && !(Array.isArray(value) && value.length === 0))) as Bibliography;
}

/** What `POST /v1/screening/jobs` takes for one paper: id, title, abstract, and the bibliographic fields it came with. */
export function toScreeningPaper(record: ImportedRecord): ScreeningPaper {
  return { id: record.id, title: record.title, abstract: record.abstract, ...paperBibliography(record) };
}

/** What `POST /v1/indexer/jobs` takes for one record (the bibliographic fields as extra keys, which the indexer keeps for its exports). */
export function toIndexerRecord(record: ImportedRecord): IndexerRecord {
  return { ID: record.id, Title: record.title, Abstract: record.abstract, ...paperBibliography(record) };
}
