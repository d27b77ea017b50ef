import { LRUCache } from "lru-cache";
import { FinishedBodyHead, jobDataObjects, ServiceError, type JobService } from "@litrev/contracts";
import { StreamedBody } from "@litrev/messaging";
import type { JobData } from "../data";

/** Text per part of a finished body (one part is one object in the job data bucket). */
const PART_CHARS = 1024 * 1024;
/** Memory the cached bodies may take in one process (a body of one part is kept whole). */
const CACHE_BYTES = 64 * 1024 * 1024;
/** What an entry costs beyond its bytes, so that many small bodies stay bounded too. */
const ENTRY_BYTES = 256;

const encoder = new TextEncoder();

/** A finished job's poll body as any process reads it: its head, and the whole bytes when it is one part. */
export interface FinishedBody extends FinishedBodyHead {
  jobId: string;
  body?: Uint8Array;
}

/** Writes a finished body's parts as its pieces come (about 1 MB each), then its head. */
class FinishedWriter {
  #parts = 0;
  #bytes = 0;
  #buffered: string[] = [];
  #size = 0;

  constructor(
    private readonly data: JobData,
    private readonly jobId: string,
  ) {}

  async add(piece: string): Promise<void> {
    this.#buffered.push(piece);
    this.#size += piece.length;
    if (this.#size >= PART_CHARS) await this.#flush();
  }

  /** The last part, then the head (so a head found means every part is there). */
  async finish(head: Omit<FinishedBodyHead, "version" | "parts" | "bytes">): Promise<FinishedBodyHead> {
    if (this.#size > 0 || this.#parts === 0) await this.#flush();
    const written: FinishedBodyHead = { version: 1, ...head, parts: this.#parts, bytes: this.#bytes };
    await this.data.putJson(`${jobDataObjects.finished(this.jobId)}/head`, written);
    return written;
  }

  async #flush(): Promise<void> {
    const part = encoder.encode(this.#buffered.join(""));
    this.#buffered = [];
    this.#size = 0;
    await this.data.putBytes(`${jobDataObjects.finished(this.jobId)}/${this.#parts}`, part);
    this.#parts++;
    this.#bytes += part.length;
  }
}

/**
 * Writes a finished job's poll body (a value) once, as its exact JSON bytes, then its head. Any
 * gateway can then serve the job's polls from the job data bucket, without asking the service.
 */
export async function writeFinishedBody(data: JobData, jobId: string, head: Omit<FinishedBodyHead, "version" | "parts" | "bytes">, body: unknown): Promise<FinishedBodyHead> {
  const writer = new FinishedWriter(data, jobId);
  await writer.add(JSON.stringify(body));
  return writer.finish(head);
}

/**
 * A streamed body that writes itself as the finished body while it is read (parked for the poll
 * that asked): one pass over the store of record, never held whole. Its head is written before
 * the last piece is handed on, so the poll's answer comes after the finished body is complete. A
 * failed write only means no finished body (a later poll writes it); the poll is answered all the same.
 */
export function finishedWhileRead(data: JobData, jobId: string, head: Omit<FinishedBodyHead, "version" | "parts" | "bytes">, body: StreamedBody): StreamedBody {
  return new StreamedBody(async function* () {
    const writer = new FinishedWriter(data, jobId);
    let writing = true;
    const write = (step: () => Promise<unknown>) =>
      step().catch(() => {
        writing = false;
      });
    let held: string | undefined;
    for await (const piece of body.pieces()) {
      if (held !== undefined) yield held;
      held = piece;
      if (writing) await write(() => writer.add(piece));
    }
    if (writing) await write(() => writer.finish(head));
    if (held !== undefined) yield held;
  });
}

/** The body's parts in order, as written (each part is whole UTF-8: it was encoded from whole strings). */
export async function* finishedParts(data: JobData, head: FinishedBody): AsyncGenerator<Uint8Array> {
  if (head.body) return yield head.body;
  for (let n = 0; n < head.parts; n++) yield await finishedPart(data, head.jobId, n);
}

export async function finishedPart(data: JobData, jobId: string, n: number): Promise<Uint8Array> {
  const bytes = await data.getBytes(`${jobDataObjects.finished(jobId)}/${n}`);
  if (!bytes) throw new ServiceError("unknown", `The finished body of job ${jobId} is no longer complete (part ${n} is missing)`);
  return bytes;
}

/** Reads a finished body's head (and its bytes when it is one part), or null when none was written. */
export async function readFinishedBody(data: JobData, jobId: string): Promise<FinishedBody | null> {
  const head = FinishedBodyHead.safeParse(await data.getJson(`${jobDataObjects.finished(jobId)}/head`));
  if (!head.success) return null;
  const found: FinishedBody = { ...head.data, jobId };
  if (found.parts > 1) return found;
  const body = await data.getBytes(`${jobDataObjects.finished(jobId)}/0`);
  return body ? { ...found, body } : null;
}

/**
 * Finished bodies of both job kinds in one bounded cache: a finished job never changes, so once
 * read its body (or, for a body of many parts, its head) is served from memory. Concurrent misses
 * of one job share one read (`LRUCache.fetch`); a job with no finished body is not remembered.
 */
export class FinishedBodies {
  readonly #cache: LRUCache<string, FinishedBody, JobData>;

  constructor(maxBytes = CACHE_BYTES) {
    this.#cache = new LRUCache<string, FinishedBody, JobData>({
      maxSize: maxBytes,
      sizeCalculation: (entry) => (entry.body?.length ?? 0) + ENTRY_BYTES,
      fetchMethod: async (key, _stale, { context }) => (await readFinishedBody(context, key.slice(key.indexOf("/") + 1))) ?? undefined,
    });
  }

  /** The cached body, in memory only (no I/O). */
  peek(service: JobService, jobId: string): FinishedBody | undefined {
    return this.#cache.get(`${service}/${jobId}`);
  }

  /** The cached body, else read from `data` (null when the job has no finished body). */
  async fetch(service: JobService, jobId: string, data: JobData): Promise<FinishedBody | null> {
    return (await this.#cache.fetch(`${service}/${jobId}`, { context: data })) ?? null;
  }

  /** Memory the cache holds, in its own measure. */
  get size(): number {
    return this.#cache.calculatedSize;
  }
}
