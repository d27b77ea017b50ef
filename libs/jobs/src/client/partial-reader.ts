import { LRUCache } from "lru-cache";
import { jobDataObjects, PartialItemsRef, type ObjectRef } from "@litrev/contracts";
import { JsonLines, type JobData } from "../data";
import type { JsonRecord } from "../store/job-store";

/** Memory the cached chunks of running jobs may take in one process. */
const CACHE_BYTES = 64 * 1024 * 1024;

interface Chunk {
  items: JsonRecord[];
  bytes: number;
}

/**
 * Reads a running job's finished items (the chunks its worker wrote, see PartialWriter). Chunks
 * never change once written, so each is read once and kept in a bounded LRU cache: a poll costs
 * no NATS traffic unless a new chunk appeared since the last one.
 */
export class PartialReader {
  readonly #chunks = new LRUCache<string, Chunk>({ maxSize: CACHE_BYTES, sizeCalculation: (chunk) => chunk.bytes });

  constructor(private readonly data: JobData) {}

  /** The items behind a live state's `extra.partial`, in the order they were finished; [] when there are none. */
  async read(jobId: string, extra: Record<string, unknown>): Promise<JsonRecord[]> {
    const parsed = PartialItemsRef.safeParse(extra.partial);
    if (!parsed.success) return [];
    const { fence, chunks } = parsed.data;
    const ref = { object: jobDataObjects.partial(jobId, fence), bytes: 0, chunks };
    const parts = await Promise.all(Array.from({ length: chunks }, (_, n) => this.#chunk(ref, n)));
    return parts.flat();
  }

  async #chunk(ref: ObjectRef, n: number): Promise<JsonRecord[]> {
    const name = `${ref.object}/${n}`;
    const cached = this.#chunks.get(name);
    if (cached) return cached.items;
    const parts = await this.data.readChunkParts(ref, n);
    const items = JsonLines.parse(parts) as JsonRecord[];
    this.#chunks.set(name, { items, bytes: Math.max(1, parts.reduce((sum, part) => sum + part.length, 0)) });
    return items;
  }
}
