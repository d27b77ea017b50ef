import type { JsonRecord } from "../store/job-store";
import type { JobRecord } from "./views";

/** A finished job as reads, exports and its report see it: its record, its small extras, and its items chunk by chunk (each call reads them again). */
export interface FinishedJob {
  record: JobRecord;
  result: JsonRecord;
  chunks: () => AsyncIterable<JsonRecord[]>;
  /**
   * Each item's title, then each item's abstract, line for line beside `chunks` (in chunks of their
   * own, not the items'); absent when the job kept none. Two lists, so that a read that needs
   * only the titles never reads the abstracts.
   */
  titles?: () => AsyncIterable<string[]>;
  abstracts?: () => AsyncIterable<string[]>;
  /** Each item's bibliographic fields as JSON text (`""`: none), line for line beside `chunks`; absent when no item had any. */
  bibliography?: () => AsyncIterable<string[]>;
  /** The job did not complete: its items are those that finished before it failed or was cancelled. */
  partial?: boolean;
}
