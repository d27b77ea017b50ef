/**
 * Runs `work` over `items` with at most `limit` in flight; rejects with the first failure after
 * aborting the rest through `signal` checks (each work item checks the signal before starting).
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (failure === undefined && next < items.length) {
      if (signal.aborted) throw signal.reason;
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
        throw error;
      }
    }
  });
  const results = await Promise.allSettled(runners);
  if (failure !== undefined) throw failure;
  const rejected = results.find((r) => r.status === "rejected");
  if (rejected) throw (rejected as PromiseRejectedResult).reason;
}

/** `[0, n)` split into consecutive batches of `size`. */
export function batches(n: number, size: number): { index: number; start: number; end: number }[] {
  const out: { index: number; start: number; end: number }[] = [];
  for (let start = 0, index = 0; start < n; start += size, index++) out.push({ index, start, end: Math.min(n, start + size) });
  return out;
}
