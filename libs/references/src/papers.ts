import type { IndexerRecord, ScreeningPaper } from "@litrev/contracts";
import type { ImportedRecord } from "./record";

/** What `POST /v1/screening/jobs` takes for one paper. */
export function toScreeningPaper(record: ImportedRecord): ScreeningPaper {
  return { id: record.id, title: record.title, abstract: record.abstract };
}

/** What `POST /v1/indexer/jobs` takes for one record. */
export function toIndexerRecord(record: ImportedRecord): IndexerRecord {
  return { ID: record.id, Title: record.title, Abstract: record.abstract };
}
