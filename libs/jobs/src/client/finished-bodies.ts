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
const decoder = new TextDecoder();

/** A finished job's poll body as any process reads it: its head, and the whole bytes when it is one part. */
export interface FinishedBody extends FinishedBodyHead {
  jobId: string;
  body?: Uint8Array;
}

/**
 * Writes a finished job's poll body once, as its exact JSON bytes in parts of about 1 MB (a
 * `StreamedBody` is written piece by piece, never held whole), then its head. Any gateway can then
 * serve the job's polls from the job data bucket, without asking the service.
 */
export async function writeFinishedBody(data: JobData, jobId: string, head: Omit<FinishedBodyHead, "version" | "parts" | "bytes">, body: unknown): Promise<FinishedBodyHead> {
  const prefix = jobDataObjects.finished(jobId);
  const pieces: AsyncIterable<string> | Iterable<string> = body instanceof StreamedBody ? body.pieces() : [JSON.stringify(body)];
  let parts = 0;
  let bytes = 0;
  let buffered: string[] = [];
  let size = 0;
  const flush = async () => {
    const part = encoder.encode(buffered.join(""));
    buffered = [];
    size = 0;
    await data.putBytes(`${prefix}/${parts}`, part);
    parts++;
    bytes += part.length;
  };
  for await (const piece of pieces) {
    buffered.push(piece);
    size += piece.length;
    if (size >= PART_CHARS) await flush();
  }
  if (size > 0 || parts === 0) await flush();
  const written: FinishedBodyHead = { version: 1, ...head, parts, bytes };
  await data.putJson(`${prefix}/head`, written);
  return written;
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

/** The body as a `StreamedBody` read back from its parts (what a service answers after writing it). */
export function finishedStreamedBody(data: JobData, head: FinishedBody): StreamedBody {
  return new StreamedBody(async function* () {
    for await (const part of finishedParts(data, head)) yield decoder.decode(part);
  });
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
