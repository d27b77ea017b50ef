import { BIBLIOGRAPHY_KEYS, jobKind, type Bibliography, type ExportFormat, type JobService } from "@litrev/contracts";
import type { JsonRecord } from "../store/job-store";
import { csvRow, UTF8_BOM, type CsvMode } from "./csv";
import { cleanText } from "@litrev/references/text";
import { risRecord } from "./ris";
import { markedExport, type SampleMarks } from "./sample-marks";
import type { FinishedJob } from "../finished/finished-job";

/** One chunk of items with the lines of the lists read beside them, index for index. */
export interface ItemsWithTexts {
  items: JsonRecord[];
  titles: string[];
  /** Only when asked for. */
  abstracts: string[] | null;
  /** Each item's bibliographic fields (null: none); null when the job kept none. */
  bibliography: (Bibliography | null)[] | null;
}

/**
 * The lines of a list read beside the items, taken as many at a time as an items chunk holds.
 * Its first chunk is asked for at once, so that it is read while the first items chunk is; after
 * that one chunk at a time, when needed. Past its end (or without a list) a line is empty.
 */
class LinesBeside {
  readonly #lines: AsyncIterator<string[]> | undefined;
  #next: Promise<IteratorResult<string[]>> | undefined;
  #chunk: string[] = [];
  #at = 0;

  constructor(list: (() => AsyncIterable<string[]>) | undefined) {
    this.#lines = list?.()[Symbol.asyncIterator]();
    this.#next = this.#lines?.next();
    this.#next?.catch(() => undefined); // awaited by the first `take`
  }

  async take(count: number): Promise<string[]> {
    const out: string[] = [];
    while (out.length < count) {
      if (this.#at < this.#chunk.length) {
        const end = Math.min(this.#chunk.length, this.#at + count - out.length);
        for (; this.#at < end; this.#at++) out.push(this.#chunk[this.#at]!);
        continue;
      }
      const step = this.#lines ? await (this.#next ?? this.#lines.next()) : undefined;
      this.#next = undefined;
      if (!step || step.done) {
        while (out.length < count) out.push("");
        break;
      }
      this.#chunk = step.value;
      this.#at = 0;
    }
    return out;
  }

  async close(): Promise<void> {
    await this.#lines?.return?.();
  }
}

/** The items chunk by chunk (`chunks`: a read of them already begun), each with its titles (and abstracts when asked; empty lines when the job kept none). */
export async function* withTexts(job: FinishedJob, abstracts = false, chunks: AsyncIterable<JsonRecord[]> = job.chunks()): AsyncGenerator<ItemsWithTexts> {
  const titles = new LinesBeside(job.titles);
  const abstractLines = abstracts ? new LinesBeside(job.abstracts) : null;
  const bibliographyLines = job.bibliography ? new LinesBeside(job.bibliography) : null;
  try {
    for await (const items of chunks) {
      yield {
        items,
        titles: await titles.take(items.length),
        abstracts: abstractLines ? await abstractLines.take(items.length) : null,
        bibliography: bibliographyLines ? (await bibliographyLines.take(items.length)).map(parseBibliography) : null,
      };
    }
  } finally {
    await titles.close();
    await abstractLines?.close();
    await bibliographyLines?.close();
  }
}

/** One line of the artifact's bibliography list: written by the artifact writer as a JSON object, `""` for none. */
function parseBibliography(line: string): Bibliography | null {
  if (!line) return null;
  const value = JSON.parse(line) as unknown;
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Bibliography) : null;
}

/**
 * The bibliographic columns of a job that kept them (CSV and JSON Lines), after the columns the
 * export has already: each named as its field, or `_<field>` when the export has a column of that
 * name (an extraction field called `year`).
 */
function bibliographyColumns(job: FinishedJob, taken: readonly string[]): { key: keyof Bibliography; column: string }[] {
  if (!job.bibliography) return [];
  return BIBLIOGRAPHY_KEYS.map((key) => ({ key, column: taken.includes(key) ? `_${key}` : key }));
}

/** About this much text per piece of an export: small pieces leave early and die young. */
const PIECE_CHARS = 64 * 1024;

/** One text line per item, in pieces of about PIECE_CHARS. */
async function* rowPieces(
  job: FinishedJob,
  abstracts: boolean,
  row: (item: JsonRecord, title: string, abstract: string, bibliography: Bibliography | null) => string,
  chunks?: AsyncIterable<JsonRecord[]>,
): AsyncGenerator<string> {
  let piece = "";
  for await (const chunk of withTexts(job, abstracts, chunks)) {
    for (let i = 0; i < chunk.items.length; i++) {
      piece += row(chunk.items[i]!, chunk.titles[i]!, chunk.abstracts?.[i] ?? "", chunk.bibliography?.[i] ?? null);
      if (piece.length >= PIECE_CHARS) {
        yield piece;
        piece = "";
      }
    }
  }
  if (piece) yield piece;
}

/**
 * A finished job's export as text pieces, produced chunk by chunk as the items are read (one chunk
 * in memory at a time), so a 50,000-paper export never exists whole in any process and its first
 * piece leaves before its last chunk is read. CSV reads ahead only as far as the first item that
 * shows the columns. Pieces are about PIECE_CHARS each, not a whole chunk's rows. Every format names each item's title (the `title` column or field, `_title`
 * when an indexer field is itself called `title`); RIS also carries the abstract.
 */
export async function* exportBody(service: JobService, job: FinishedJob, format: ExportFormat, csv: CsvMode = "spreadsheet", marks?: SampleMarks): AsyncGenerator<string> {
  const idKey = jobKind(service).inputKeys.id;
  const kind = marks ? markedExport(jobKind(service).export, idKey, marks) : jobKind(service).export;
  if (format === "jsonl") {
    const line = kind.line(job.result);
    yield* rowPieces(job, false, (item, title, _abstract, bibliography) => {
      const { [idKey]: id, ...rest } = line(item);
      const extra: JsonRecord = {};
      if (job.bibliography) for (const { key, column } of bibliographyColumns(job, Object.keys(rest))) extra[column] = bibliography?.[key] ?? null;
      return `${JSON.stringify({ [idKey]: id, [titleKey(rest)]: cleanText(title), ...rest, ...extra })}\n`;
    });
    return;
  }
  if (format === "ris") {
    const tags = kind.ris(job.record, job.result);
    yield* rowPieces(job, true, (item, title, abstract, bibliography) => risRecord({ id: String(item[idKey] ?? ""), title: cleanText(title), abstract: cleanText(abstract), bibliography, ...tags(item) }));
    return;
  }
  const { sample, chunks } = kind.needsSample(job.record) ? await findSample(job, kind.isSample) : { sample: undefined, chunks: undefined };
  const table = kind.table(job.record, job.result, sample);
  const guard = csv === "spreadsheet";
  const [idColumn, ...rest] = table.header;
  const extra = bibliographyColumns(job, table.header);
  if (guard) yield UTF8_BOM;
  yield csvRow([idColumn, rest.includes("title") ? "_title" : "title", ...rest, ...extra.map((c) => c.column)], guard);
  yield* rowPieces(job, false, (item, title, _abstract, bibliography) => {
    const [id, ...cells] = table.row(item);
    return csvRow([id, cleanText(title), ...cells, ...extra.map((c) => bibliography?.[c.key] ?? null)], guard);
  }, chunks);
}

/**
 * The first item that shows the columns, read chunk by chunk. Found in the first chunk (the usual
 * case), the rows go on from that same read (`chunks`: that chunk, then the rest), so the header
 * does not wait for a second read; found later or not at all, the rows read the items again.
 */
async function findSample(job: FinishedJob, isSample: (item: JsonRecord) => boolean): Promise<{ sample: JsonRecord | undefined; chunks: AsyncIterable<JsonRecord[]> | undefined }> {
  const read = job.chunks()[Symbol.asyncIterator]();
  for (let step = await read.next(), first = true; !step.done; step = await read.next(), first = false) {
    const sample = step.value.find(isSample);
    if (!sample) continue;
    if (first) return { sample, chunks: resumed(step.value, read) };
    await read.return?.();
    return { sample, chunks: undefined };
  }
  return { sample: undefined, chunks: undefined };
}

/** `first`, then the rest of the read it came from. */
async function* resumed(first: JsonRecord[], rest: AsyncIterator<JsonRecord[]>): AsyncGenerator<JsonRecord[]> {
  try {
    yield first;
    for (let step = await rest.next(); !step.done; step = await rest.next()) yield step.value;
  } finally {
    await rest.return?.();
  }
}

const titleKey = (line: JsonRecord) => ("title" in line ? "_title" : "title");
