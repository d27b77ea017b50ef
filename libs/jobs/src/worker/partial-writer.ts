import { jobDataObjects, type PartialItemsRef } from "@litrev/contracts";
import type { JobData, LinesWriter } from "../data";
import type { JsonRecord } from "../store/job-store";
import { retrying } from "../retry";

/**
 * A chunk is written once it holds this many items, or when this long has passed since the last
 * chunk: polls of a slow job see each item soon, a fast job's items are batched.
 */
const CHUNK_ITEMS = 100;
const CHUNK_GAP_MS = 250;

/**
 * A run's finished items as a chunked list (`partial/<job>/<fence>`, chunks only, in the one chunk
 * format), so readers of a running job cache each immutable chunk once instead of re-reading the
 * job's checkpoints on every poll. The reference (`PartialItemsRef`) goes into the live state with
 * the next progress write.
 */
export class PartialWriter {
  readonly #lines: LinesWriter;
  #pending = 0;
  #lastChunk = 0;
  #writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly data: JobData,
    jobId: string,
    private readonly fence: number,
    /** Called before every chunk write: throws when the run may no longer write (lost lease, hand-back). */
    private readonly mayWrite: () => Promise<void>,
  ) {
    this.#lines = data.lines(jobDataObjects.partial(jobId, fence));
  }

  /** Where the chunks written so far are. */
  get ref(): PartialItemsRef {
    const { chunks, lines } = this.#lines.ref;
    return { fence: this.fence, chunks: chunks ?? 0, items: lines ?? 0 };
  }

  /** Buffers items; writes a chunk when the buffer is full or old. Resolves once that write (if any) landed. */
  append(items: readonly JsonRecord[]): Promise<void> {
    if (items.length === 0) return this.#writes;
    this.#writes = this.#writes.then(() => this.#lines.add(items));
    this.#pending += items.length;
    if (this.#pending >= CHUNK_ITEMS || Date.now() - this.#lastChunk >= CHUNK_GAP_MS) return this.flush();
    return this.#writes;
  }

  /** Writes whatever is buffered as one more chunk. */
  flush(): Promise<void> {
    this.#pending = 0;
    this.#lastChunk = Date.now();
    this.#writes = this.#writes.then(async () => {
      await this.mayWrite();
      // Through a brief outage or a stream leader election, as checkpoints are (a failed write keeps its buffer: a repeat writes the same chunk).
      await retrying(() => this.#lines.flush());
    });
    return this.#writes;
  }

  /** Removes the chunks of this run (the job ended: its items are in its artifact). */
  async remove(): Promise<void> {
    await this.data.deleteLines(this.#lines.ref);
  }
}
