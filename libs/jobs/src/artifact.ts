import { DEFAULT_JOB_OWNER, jobKind, JobArtifactHead, jobDataObjects, ServiceError, type ItemText, type JobService, type ObjectRef } from "@litrev/contracts";
import { JsonLines, type JobData, type LinesWriter, type Parts } from "./data";
import type { FinishedJob } from "./finished/finished-job";
import { buildReport, OutcomeCounter, type PromptInstructions } from "./finished/report";
import { resultOf } from "./finished/views";
import type { JsonRecord, StoredJob } from "./store/job-store";

/**
 * A finished job's artifact: everything any read of the finished job needs, written once by the
 * worker that ended it (completed or failed), in the job data store, before its live state turns
 * terminal. The items are a chunked list in the one chunk format (`finished/<id>/<fence>/<n>`, the
 * run's fence keeping a stale run's chunks apart); the head (`finished/<id>/head`) is written last
 * and holds the owner, the status, the poll body's text around the item list, the stored record
 * and the methods report. Beside the items, line for line, each item's title (`titles`) and its
 * abstract (`abstracts`) from the job's input, two lists: every export names each paper, and RIS
 * exports and validation samples carry its abstract too, after the input itself is gone; a CSV or
 * JSON Lines export reads the small list only. A third list (`bibliography`), written only when
 * some item came with bibliographic fields, carries them back into every export. Every gateway streams polls, exports, the end event, the validation's
 * read and the report from it, without asking the owning service.
 */

/** Stands in for the item list while the poll body's fixed fields are serialised. */
const ITEMS_MARK = "\u0000litrev:artifact-items\u0000";
const ITEMS_MARK_JSON = JSON.stringify(ITEMS_MARK);

/** The poll body's text around its item list: `before` + items joined by commas + `after`; `after` null when the view shows no items. */
export function pollFrame(service: JobService, record: StoredJob): JobArtifactHead["poll"] {
  // The fixed fields as a caller of the poll operation reads them (its response schema's key order).
  const kind = jobKind(service);
  const view = kind.operations.get.response.parse(kind.view(record, { items: [], result: resultOf(record) }, [])) as JsonRecord;
  const field = kind.itemsField;
  if (!Array.isArray(view[field])) return { before: JSON.stringify(view), after: null };
  const text = JSON.stringify({ ...view, [field]: [ITEMS_MARK] });
  const at = text.indexOf(ITEMS_MARK_JSON);
  return { before: text.slice(0, at), after: text.slice(at + ITEMS_MARK_JSON.length) };
}

/** Writes one job's artifact: its items chunk by chunk as they come (counted for the report), then its head. */
export class ArtifactWriter {
  readonly #lines: LinesWriter;
  readonly #titles: LinesWriter;
  readonly #abstracts: LinesWriter;
  readonly #bibliography: LinesWriter;
  /** Whether any item so far came with bibliographic fields (else the list is left out of the head). */
  #anyBibliography = false;
  /** Items pushed before the first with bibliographic fields (their empty lines are written only if one comes). */
  #withoutBibliography = 0;
  readonly #outcomes: OutcomeCounter;

  constructor(
    private readonly data: JobData,
    private readonly service: JobService,
    private readonly jobId: string,
    fence: number,
  ) {
    this.#lines = data.lines(jobDataObjects.artifactItems(jobId, fence));
    this.#titles = data.lines(jobDataObjects.artifactTitles(jobId, fence));
    this.#abstracts = data.lines(jobDataObjects.artifactAbstracts(jobId, fence));
    this.#bibliography = data.lines(jobDataObjects.artifactBibliography(jobId, fence));
    this.#outcomes = new OutcomeCounter(service);
  }

  /**
   * Buffers items into the artifact (and counts them for the report), with their texts (one each,
   * in order; none when the input is gone); true when a chunk is full (`flush` writes it).
   */
  push(items: readonly JsonRecord[], texts?: readonly ItemText[]): boolean {
    this.#outcomes.add(items, texts);
    const full = this.#lines.push(items);
    if (!texts) return full;
    if (texts.length !== items.length) throw new Error(`${texts.length} texts for ${items.length} items`);
    const titlesFull = this.#titles.push(texts.map((text) => text.title));
    const abstractsFull = this.#abstracts.push(texts.map((text) => text.abstract));
    if (!this.#anyBibliography && !texts.some((text) => text.bibliography)) {
      this.#withoutBibliography += texts.length;
      return abstractsFull || titlesFull || full;
    }
    // The first item with bibliographic fields: the items before it get their empty lines now.
    if (!this.#anyBibliography) this.#bibliography.push(Array.from({ length: this.#withoutBibliography }, () => ""));
    this.#anyBibliography = true;
    return this.#bibliography.push(texts.map((text) => (text.bibliography ? JSON.stringify(text.bibliography) : ""))) || abstractsFull || titlesFull || full;
  }

  /** Writes the buffered items (and texts) as chunks; may be repeated after a failure (the buffers are kept until they land). */
  async flush(): Promise<void> {
    await this.#lines.flush();
    await this.#titles.flush();
    await this.#abstracts.flush();
    await this.#bibliography.flush();
  }

  /** The last chunk, then the head: from here on the artifact is complete. */
  async finish(record: StoredJob, prompts?: PromptInstructions, persistent = true): Promise<JobArtifactHead> {
    const items = await this.#lines.close();
    const titles = await this.#titles.close();
    const abstracts = await this.#abstracts.close();
    const bibliography = await this.#bibliography.close();
    const head: JobArtifactHead = {
      version: 1,
      owner: record.owner ?? DEFAULT_JOB_OWNER,
      status: record.status,
      poll: pollFrame(this.service, record),
      record: record as unknown as JsonRecord,
      report: buildReport(this.service, record, this.#outcomes, prompts),
      items,
      // Every item has its text, or the input was gone and none has.
      ...(titles.lines === items.lines && abstracts.lines === items.lines && (items.lines ?? 0) > 0 ? { titles, abstracts } : {}),
      ...(this.#anyBibliography && bibliography.lines === items.lines ? { bibliography } : {}),
      ...(persistent ? {} : { persistent: false as const }),
    };
    await this.data.putJson(jobDataObjects.artifactHead(this.jobId), head);
    return head;
  }

  /** Removes the chunks written so far (a run that may no longer finish the job). */
  async discard(): Promise<void> {
    await this.data.deleteLines(this.#lines.ref);
    await this.data.deleteLines(this.#titles.ref);
    await this.data.deleteLines(this.#abstracts.ref);
    await this.data.deleteLines(this.#bibliography.ref);
  }
}

/** The job's artifact head, or null when it has none (yet, or any more). */
export async function readArtifactHead(data: JobData, jobId: string): Promise<JobArtifactHead | null> {
  const head = JobArtifactHead.safeParse(await data.getJson(jobDataObjects.artifactHead(jobId)));
  return head.success ? head.data : null;
}

/**
 * Chunks `0 … count-1` in order, as `read` gives them, one read ahead of the consumer: the next
 * read starts once the current chunk is in (while the consumer works on it), so at most one read
 * is in flight, and the first chunk does not share the connection with the second.
 */
async function* inOrder<T>(count: number, read: (n: number) => Promise<T>): AsyncGenerator<T> {
  let ahead: Promise<T> | undefined;
  for (let n = 0; n < count; n++) {
    const current = await (ahead ?? read(n));
    ahead = n + 1 < count ? read(n + 1) : undefined;
    ahead?.catch(() => undefined); // awaited in its turn
    yield current;
  }
}

/** Chunk `n` of the artifact's items as the inside of the poll body's item list (`a,b,c`), made in the bytes just read. */
export async function pollChunk(data: JobData, head: JobArtifactHead, n: number): Promise<Uint8Array[]> {
  return JsonLines.asArrayItems(await data.readChunkParts(head.items, n));
}

/**
 * The poll body's bytes, piece by piece: the text before the items, each chunk's items joined by
 * commas, the text after. Exactly `JSON.stringify` of the whole poll body; never held whole.
 * `read` gives chunk n in that form, in the pieces it was read in (a reader shared by concurrent
 * polls may cache it).
 */
export async function* pollPieces(data: JobData, head: JobArtifactHead, read = (n: number) => pollChunk(data, head, n)): AsyncGenerator<Uint8Array> {
  yield Buffer.from(head.poll.before);
  if (head.poll.after === null) return;
  let separator = false;
  for await (const items of inOrder(head.items.chunks ?? 0, read)) {
    if (items.length === 0) continue;
    if (separator) yield COMMA;
    yield* items;
    separator = true;
  }
  yield Buffer.from(head.poll.after);
}

const COMMA = Buffer.from(",");

/** Chunk `n` of one of an artifact's lists, as stored (a reader may share what it read: an artifact never changes). */
export type ArtifactChunkReader = (ref: ObjectRef, n: number) => Promise<Parts>;

/**
 * The finished job as exports read it: its record, its items chunk by chunk from the artifact (one
 * chunk read ahead), and, when it kept them, its titles and abstracts, each list read only when
 * asked for and one chunk at a time (a title list chunk covers many item chunks).
 */
export function artifactJob(data: JobData, head: JobArtifactHead, read: ArtifactChunkReader = (ref, n) => data.readChunkParts(ref, n)): FinishedJob {
  const record = head.record as unknown as StoredJob;
  const { titles, abstracts, bibliography } = head;
  return {
    record,
    result: resultOf(record),
    partial: head.status !== "completed",
    chunks: async function* () {
      for await (const parts of inOrder(head.items.chunks ?? 0, (n) => read(head.items, n))) yield JsonLines.parse(parts) as JsonRecord[];
    },
    ...(titles && abstracts ? { titles: () => stringLines(read, titles), abstracts: () => stringLines(read, abstracts) } : {}),
    ...(bibliography ? { bibliography: () => stringLines(read, bibliography) } : {}),
  };
}

/** A list of strings written by this module, chunk by chunk: each line checked to be one (no schema object per line on an export's path). */
async function* stringLines(read: ArtifactChunkReader, ref: ObjectRef): AsyncGenerator<string[]> {
  for (let n = 0; n < (ref.chunks ?? 0); n++) {
    const chunk = JsonLines.parse(await read(ref, n));
    if (!chunk.every((line) => typeof line === "string")) throw new ServiceError("unknown", `The stored list ${ref.object} holds a line that is not a string`);
    yield chunk as string[];
  }
}
