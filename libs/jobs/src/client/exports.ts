import { JOB_KINDS, type ExportFormat, type ItemText, type JobService } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { csvRow, UTF8_BOM, type CsvMode } from "./csv";
import { risRecord } from "./ris";
import { markedExport, type SampleMarks } from "./sample-marks";
import type { JobRecord } from "./views";

/** A finished job as exports read it: its record, its small extras, and its items chunk by chunk (each call reads them again). */
export interface FinishedJob {
  record: JobRecord;
  result: JsonRecord;
  chunks: () => AsyncIterable<JsonRecord[]>;
  /** Each item's title and abstract, line for line beside `chunks`; absent when the job kept none. */
  texts?: () => AsyncIterable<ItemText[]>;
  /** The job did not complete: its items are those that finished before it failed or was cancelled. */
  partial?: boolean;
}

const NO_TEXT: ItemText = { title: "", abstract: "" };

/** The items chunk by chunk, each with its text (empty texts when the job kept none). */
export async function* withTexts(job: FinishedJob): AsyncGenerator<[JsonRecord, ItemText][]> {
  const texts = job.texts?.()[Symbol.asyncIterator]();
  let pending: ItemText[] = [];
  let at = 0;
  const next = async (): Promise<ItemText> => {
    while (texts && at >= pending.length) {
      const read = await texts.next();
      if (read.done) return NO_TEXT;
      pending = read.value;
      at = 0;
    }
    return texts ? pending[at++]! : NO_TEXT;
  };
  for await (const chunk of job.chunks()) {
    const out: [JsonRecord, ItemText][] = [];
    for (const item of chunk) out.push([item, await next()]);
    yield out;
  }
}

/**
 * A finished job's export as text pieces, produced chunk by chunk as the items are read (one chunk
 * in memory at a time), so a 50,000-paper export never exists whole in any process and its first
 * piece leaves before its last chunk is read. CSV reads ahead only as far as the first item that
 * shows the columns. Every format names each item's title (the `title` column or field, `_title`
 * when an indexer field is itself called `title`); RIS also carries the abstract.
 */
export async function* exportBody(service: JobService, job: FinishedJob, format: ExportFormat, csv: CsvMode = "spreadsheet", marks?: SampleMarks): AsyncGenerator<string> {
  const idKey = JOB_KINDS[service].inputKeys.id;
  const kind = marks ? markedExport(JOB_KINDS[service].export, idKey, marks) : JOB_KINDS[service].export;
  if (format === "jsonl") {
    const line = kind.line(job.result);
    for await (const chunk of withTexts(job)) {
      if (chunk.length === 0) continue;
      yield chunk
        .map(([item, text]) => {
          const { [idKey]: id, ...rest } = line(item);
          return `${JSON.stringify({ [idKey]: id, [titleKey(rest)]: text.title, ...rest })}\n`;
        })
        .join("");
    }
    return;
  }
  if (format === "ris") {
    const tags = kind.ris(job.record, job.result);
    for await (const chunk of withTexts(job)) {
      yield chunk.map(([item, text]) => risRecord({ id: String(item[idKey] ?? ""), title: text.title, abstract: text.abstract, ...tags(item) })).join("");
    }
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
  const guard = csv === "spreadsheet";
  const [idColumn, ...rest] = table.header;
  // The id (first column) is never guarded: `-2` must stay `-2` for a join by id.
  if (guard) yield UTF8_BOM;
  yield csvRow([idColumn, rest.includes("title") ? "_title" : "title", ...rest], guard, 1);
  for await (const chunk of withTexts(job)) {
    if (chunk.length === 0) continue;
    yield chunk
      .map(([item, text]) => {
        const [id, ...cells] = table.row(item);
        return csvRow([id, text.title, ...cells], guard, 1);
      })
      .join("");
  }
}

const titleKey = (line: JsonRecord) => ("title" in line ? "_title" : "title");
