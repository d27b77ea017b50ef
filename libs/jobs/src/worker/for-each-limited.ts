import pMap from "p-map";

/**
 * Runs `work` over `source` (an array, or a stream read from storage) with at most `limit` in flight.
 * p-map takes the next item only when a slot frees, so a stream is never read ahead of the work.
 * The first failure, or the signal (with its reason), stops it: no item starts after that, and the
 * rejection waits for the calls already in flight to settle, so none of them still writes a
 * checkpoint once the caller has moved on.
 */
export async function forEachLimited<T>(
  source: Iterable<T> | AsyncIterable<T>,
  limit: number,
  signal: AbortSignal,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const track = (item: T): Promise<void> => {
    const call = work(item);
    inFlight.add(call);
    const settled = () => void inFlight.delete(call);
    call.then(settled, settled);
    return call;
  };
  try {
    await pMap(source, track, { concurrency: Math.max(1, limit), signal });
  } catch (error) {
    await Promise.allSettled(inFlight);
    throw error;
  }
}
