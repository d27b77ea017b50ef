import { LRUCache } from "lru-cache";
import { jobDataObjects, type JobArtifactHead, type JobService, type ObjectRef } from "@litrev/contracts";
import { artifactJob, pollChunk, pollPieces, readArtifactHead } from "../artifact";
import type { JobData, Parts } from "../data";
import type { FinishedJob } from "../finished/finished-job";

/** Memory the cached artifacts may take in one process. */
const CACHE_BYTES = 64 * 1024 * 1024;
/** A poll body up to this size is kept whole beside its head (larger ones are streamed from the chunks every time). */
const WHOLE_BODY_BYTES = 1024 * 1024;
/** What an entry costs beyond its poll body: its head (record, report). */
const HEAD_BYTES = 8 * 1024;
/**
 * Memory the poll chunks of large artifacts may take in one process: a window that concurrent reads
 * of one job, which move through its chunks at about the same pace, share; not the whole body (a
 * 50,000-paper job's is 23 MB), so a gateway's first large read grows its memory by at most this
 * much beyond what one read in flight takes (docs/performance.md).
 */
const CHUNK_CACHE_BYTES = 16 * 1024 * 1024;
/**
 * Memory the stored chunks of artifacts' lists (items, titles, abstracts, bibliography) may take in
 * one process, as read for exports, reports, validations and sample downloads: a job exported again
 * and again is read from NATS once (each read of an object is a consumer on the stream, which costs
 * the NATS server more than the bytes), and concurrent reads of one large job share its chunks.
 */
const LIST_CACHE_BYTES = 16 * 1024 * 1024;

/** A finished job as a process holds it: its artifact head, and its whole poll body when that is small. */
export interface FinishedArtifact {
  jobId: string;
  head: JobArtifactHead;
  /** The poll body's bytes, when it is one chunk or less and small. */
  body?: Buffer;
}

/** An entry's cost in a cache of chunks kept in the pieces they were read in (at least 1, as lru-cache requires). */
const partsBytes = (parts: readonly Uint8Array[]) => Math.max(1, parts.reduce((sum, part) => sum + part.length, 0));

/** Deleted jobs remembered per process, so a read that was in flight as one was deleted is not cached. */
const ERASED_JOBS = 10_000;

/**
 * Finished jobs' artifact heads (and small poll bodies) of both job kinds in one bounded cache: an
 * artifact never changes once its head is written, so the only invalidation is a job's deletion
 * (`forget`, told by the owning service to every gateway). Concurrent misses of one job share one
 * read (`LRUCache.fetch`); a job without an artifact is not remembered.
 */
export class FinishedArtifacts {
  readonly #cache: LRUCache<string, FinishedArtifact, JobData>;
  /**
   * The poll form of large artifacts' chunks, by service, job and chunk: concurrent polls of one
   * large job read each chunk once and send the same bytes (the bound keeps a few jobs' worth).
   */
  readonly #chunks: LRUCache<string, Uint8Array[], { data: JobData; artifact: FinishedArtifact; n: number }>;
  /** The artifacts' list chunks as stored, by service, object and chunk (`job`). */
  readonly #lists: LRUCache<string, Parts, { data: JobData; ref: ObjectRef; n: number }>;
  /** Jobs deleted while this process ran (job ids are never reused). */
  readonly #erased = new LRUCache<string, true>({ max: ERASED_JOBS });

  constructor(maxBytes = CACHE_BYTES, chunkBytes = CHUNK_CACHE_BYTES, listBytes = LIST_CACHE_BYTES) {
    this.#cache = new LRUCache<string, FinishedArtifact, JobData>({
      maxSize: maxBytes,
      sizeCalculation: (entry) => (entry.body?.length ?? 0) + HEAD_BYTES,
      fetchMethod: async (key, _stale, { context }) => (await readArtifact(context, key.slice(key.indexOf("/") + 1))) ?? undefined,
    });
    this.#chunks = new LRUCache<string, Uint8Array[], { data: JobData; artifact: FinishedArtifact; n: number }>({
      maxSize: chunkBytes,
      sizeCalculation: partsBytes,
      fetchMethod: (_key, _stale, { context }) => pollChunk(context.data, context.artifact.head, context.n),
    });
    this.#lists = new LRUCache<string, Parts, { data: JobData; ref: ObjectRef; n: number }>({
      maxSize: listBytes,
      sizeCalculation: partsBytes,
      fetchMethod: (_key, _stale, { context }) => context.data.readChunkParts(context.ref, context.n),
    });
  }

  /** The finished job as exports and validations read it, its lists' chunks through the shared list cache. */
  job(service: JobService, artifact: FinishedArtifact, data: JobData): FinishedJob {
    return artifactJob(data, artifact.head, async (ref, n) => {
      const parts = await this.#lists.fetch(`${service}/${ref.object}/${n}`, { context: { data, ref, n } });
      if (!parts) throw new Error(`chunk ${n} of ${ref.object} could not be read`);
      return parts;
    });
  }

  /** The finished job's poll body, piece by piece; a large one's chunks through the shared chunk cache. */
  pollPieces(service: JobService, artifact: FinishedArtifact, data: JobData): AsyncGenerator<Uint8Array> {
    return pollPieces(data, artifact.head, async (n) => {
      const bytes = await this.#chunks.fetch(`${service}/${artifact.jobId}/${n}`, { context: { data, artifact, n } });
      if (!bytes) throw new Error(`chunk ${n} of job ${artifact.jobId} could not be read`);
      return bytes;
    });
  }

  /** The cached artifact, in memory only (no I/O). */
  peek(service: JobService, jobId: string): FinishedArtifact | undefined {
    return this.#cache.get(`${service}/${jobId}`);
  }

  /** The cached artifact, else read from `data` (null when the job has none, or was deleted). */
  async fetch(service: JobService, jobId: string, data: JobData): Promise<FinishedArtifact | null> {
    const key = `${service}/${jobId}`;
    if (this.#erased.has(key)) return null;
    const artifact = (await this.#cache.fetch(key, { context: data })) ?? null;
    // Deleted while it was being read: not kept, not answered.
    if (artifact && this.#erased.has(key)) {
      this.#cache.delete(key);
      return null;
    }
    return artifact;
  }

  /** Drops a deleted job's artifact (its large body's chunks, its lists' chunks): from now on it is read from the bucket, where it is gone. */
  forget(service: JobService, jobId: string): void {
    const key = `${service}/${jobId}`;
    this.#erased.set(key, true);
    this.#cache.delete(key);
    for (const chunk of [...this.#chunks.keys()]) if (chunk.startsWith(`${key}/`)) this.#chunks.delete(chunk);
    const objects = jobDataObjects.ofJob(jobId).map((prefix) => `${service}/${prefix}`);
    for (const chunk of [...this.#lists.keys()]) if (objects.some((prefix) => chunk.startsWith(prefix))) this.#lists.delete(chunk);
  }

  /** Drops every cached artifact (a gateway that lost NATS for a while may have missed deletions). */
  clear(): void {
    this.#cache.clear();
    this.#chunks.clear();
    this.#lists.clear();
  }
}

async function readArtifact(data: JobData, jobId: string): Promise<FinishedArtifact | null> {
  const head = await readArtifactHead(data, jobId);
  if (!head) return null;
  if ((head.items.chunks ?? 0) > 1 || head.items.bytes > WHOLE_BODY_BYTES) return { jobId, head };
  const pieces: Buffer[] = [];
  for await (const piece of pollPieces(data, head)) pieces.push(Buffer.from(piece));
  return { jobId, head, body: Buffer.concat(pieces) };
}
