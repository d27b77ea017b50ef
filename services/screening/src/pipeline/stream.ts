/** One batch of consecutive input items: batch `index` starts at item `start` (as `batches` in pool.ts numbers them). */
export interface StreamedBatch<T> {
  index: number;
  start: number;
  items: T[];
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

/**
 * Runs `work` over the items of `source` with at most `limit` in flight, taking the next item only
 * when a slot is free: a stream read from storage is consumed as fast as the work goes and never
 * read ahead. Rejects with the first failure; the others stop before their next item.
 */
export async function forEachStreamed<T>(source: AsyncIterable<T>, limit: number, signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  const iterator = source[Symbol.asyncIterator]();
  let failure: { error: unknown } | undefined;
  const runner = async () => {
    while (!failure) {
      if (signal.aborted) throw signal.reason;
      const step = await iterator.next();
      if (step.done || failure) return;
      await work(step.value);
    }
  };
  const runners = Array.from({ length: Math.max(1, limit) }, () =>
    runner().catch((error: unknown) => {
      failure ??= { error };
    }),
  );
  await Promise.all(runners);
  if (failure) {
    await iterator.return?.(undefined).catch(() => undefined);
    throw failure.error;
  }
}
