import { jobDataObjects, type PartialItemsRef } from "@litrev/contracts";
import type { JobData } from "../data";
import type { JsonRecord } from "../store/job-store";
import { retrying } from "../retry";

/**
 * A chunk is written once it holds this many items, or when this long has passed since the last
 * chunk: polls of a slow job see each item soon, a fast job's items are batched.
 */
const CHUNK_ITEMS = 100;
const CHUNK_GAP_MS = 250;

/**
 * A run's finished items as immutable chunk objects (`partial/<job>/<fence>/<n>`), so readers of a
 * running job cache each chunk once instead of re-reading the job's checkpoints on every poll. The
 * reference (`PartialItemsRef`) goes into the live state with the next progress write.
 */
export class PartialWriter {
  #buffer: JsonRecord[] = [];
  #lastChunk = 0;
  #chunks = 0;
  #items = 0;
  #writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly data: JobData,
    private readonly jobId: string,
    private readonly fence: number,
    /** Called before every chunk write: throws when the run may no longer write (lost lease, hand-back). */
    private readonly mayWrite: () => Promise<void>,
  ) {}

  /** Where the chunks written so far are. */
  get ref(): PartialItemsRef {
    return { fence: this.fence, chunks: this.#chunks, items: this.#items };
  }

  /** Buffers items; writes a chunk when the buffer is full or old. Resolves once that write (if any) landed. */
  append(items: readonly JsonRecord[]): Promise<void> {
    if (items.length === 0) return this.#writes;
    this.#buffer.push(...items);
    if (this.#buffer.length >= CHUNK_ITEMS || Date.now() - this.#lastChunk >= CHUNK_GAP_MS) return this.flush();
    return Promise.resolve();
  }

  /** Writes whatever is buffered as one more chunk. */
  flush(): Promise<void> {
    if (this.#buffer.length === 0) return this.#writes;
    const chunk = this.#buffer;
    this.#buffer = [];
    this.#lastChunk = Date.now();
    this.#writes = this.#writes.then(async () => {
      await this.mayWrite();
      // Through a brief outage or a stream leader election, as checkpoints are (a chunk's name is its own: a repeat overwrites it).
      await retrying(() => this.data.putJson(jobDataObjects.partial(this.jobId, this.fence, this.#chunks), chunk));
      this.#chunks++;
      this.#items += chunk.length;
    });
    return this.#writes;
  }

  /** Removes the chunks of this run (the job ended; its results are in the store or the result object). */
  async remove(): Promise<void> {
    for (let n = 0; n < this.#chunks; n++) await this.data.delete(jobDataObjects.partial(this.jobId, this.fence, n));
  }
}
