import type { PartsRef } from "@litrev/messaging";

/** Memory the cached parts of streamed poll bodies may take in one gateway. */
const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Parts of streamed poll bodies (finished jobs with many results), shared by the polls that stream
 * one body at about the same time: each part is read from NATS once and kept while it is among the
 * most recently used `CACHE_BYTES`, so forty concurrent polls of one job cost one read of its body,
 * not forty, and memory stays bounded whatever the body's size.
 */
export class PartCache {
  /** Resolved parts, oldest first (a Map keeps insertion order: re-inserting marks as recent). */
  readonly #parts = new Map<string, Uint8Array>();
  /** Reads in progress, so that concurrent readers of one part share one read. */
  readonly #reading = new Map<string, Promise<Uint8Array>>();
  #bytes = 0;

  constructor(private readonly maxBytes = CACHE_BYTES) {}

  /** The body's parts in order, each read through the cache. */
  async *stream(ref: PartsRef, readPart: (n: number) => Promise<Uint8Array>): AsyncGenerator<Uint8Array> {
    const part = (n: number) => this.#part(`${ref.name}/${n}`, () => readPart(n));
    // One part read ahead: the next part travels from NATS while this one goes to the client.
    let next = ref.parts > 0 ? part(0) : undefined;
    for (let n = 0; n < ref.parts; n++) {
      const current = next!;
      next = n + 1 < ref.parts ? part(n + 1) : undefined;
      next?.catch(() => undefined); // awaited in its turn
      yield await current;
    }
  }

  get bytes(): number {
    return this.#bytes;
  }

  #part(key: string, read: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const cached = this.#parts.get(key);
    if (cached) {
      this.#parts.delete(key);
      this.#parts.set(key, cached);
      return Promise.resolve(cached);
    }
    let reading = this.#reading.get(key);
    if (!reading) {
      reading = read();
      this.#reading.set(key, reading);
      reading.then(
        (bytes) => {
          this.#reading.delete(key);
          this.#keep(key, bytes);
        },
        () => this.#reading.delete(key),
      );
    }
    return reading;
  }

  #keep(key: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes) return;
    this.#parts.set(key, bytes);
    this.#bytes += bytes.length;
    for (const [oldest, value] of this.#parts) {
      if (this.#bytes <= this.maxBytes) break;
      this.#parts.delete(oldest);
      this.#bytes -= value.length;
    }
  }
}
