import { JOB_KINDS, type ExportFormat, type JobService } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { csvRow } from "./csv";
import type { JobRecord } from "./views";

/** A finished job as exports read it: its record, its small extras, and its items chunk by chunk (each call reads them again). */
export interface FinishedJob {
  record: JobRecord;
  result: JsonRecord;
  chunks: () => AsyncIterable<JsonRecord[]>;
}

/**
 * A finished job's export as text pieces, produced chunk by chunk as the items are read (one chunk
 * in memory at a time), so a 50,000-paper export never exists whole in any process and its first
 * piece leaves before its last chunk is read. CSV reads ahead only as far as the first item that
 * shows the columns.
 */
export async function* exportBody(service: JobService, job: FinishedJob, format: ExportFormat): AsyncGenerator<string> {
  const kind = JOB_KINDS[service].export;
  if (format === "jsonl") {
    const line = kind.line(job.result);
    for await (const chunk of job.chunks()) if (chunk.length > 0) yield chunk.map((item) => `${JSON.stringify(line(item))}\n`).join("");
    return;
  }
  let sample: JsonRecord | undefined;
  if (kind.needsSample(job.record)) {
    search: for await (const chunk of job.chunks()) {
      for (const item of chunk) {
        if (kind.isSample(item)) {
          sample = item;
          break search;
        }
      }
    }
  }
  const table = kind.table(job.record, job.result, sample);
  yield csvRow(table.header);
  for await (const chunk of job.chunks()) if (chunk.length > 0) yield chunk.map((item) => csvRow(table.row(item))).join("");
}
