/** `[0, n)` split into consecutive batches of `size`. */
export function batches(n: number, size: number): { index: number; start: number; end: number }[] {
  const out: { index: number; start: number; end: number }[] = [];
  for (let start = 0, index = 0; start < n; start += size, index++) out.push({ index, start, end: Math.min(n, start + size) });
  return out;
}

/** One batch of consecutive input items: batch `index` starts at item `start` (as `batches` numbers them). */
export interface StreamedBatch<T> {
  index: number;
  start: number;
  items: T[];
}

/**
 * The batches in order, each once `ready(end(batch))` resolves: a stage whose batches need what
 * another stage, still running, writes first. Read only as the loop takes them, so at most one waits.
 */
export async function* whenReady<B>(batches: Iterable<B> | AsyncIterable<B>, end: (batch: B) => number, ready: (end: number) => Promise<void>): AsyncGenerator<B> {
  for await (const batch of batches) {
    await ready(end(batch));
    yield batch;
  }
}

/** Consecutive batches of `size` items cut from a stream of chunks of any size. */
export async function* batchesOf<T>(chunks: AsyncIterable<T[]>, size: number): AsyncGenerator<StreamedBatch<T>> {
  let items: T[] = [];
  let start = 0;
  let index = 0;
  for await (const chunk of chunks) {
    for (const item of chunk) {
      items.push(item);
      if (items.length === size) {
        yield { index: index++, start, items };
        start += size;
        items = [];
      }
    }
  }
  if (items.length > 0) yield { index, start, items };
}
