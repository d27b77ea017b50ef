import pLimit from "p-limit";

/**
 * Runs `work` over `items` with at most `limit` in flight; rejects with the first failure once the
 * calls in flight have settled. Items not yet started when a call fails, or when `signal` fires,
 * are skipped (an aborted signal rejects with its reason).
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  const run = pLimit(Math.max(1, limit));
  let failure: { error: unknown } | undefined;
  await Promise.all(
    items.map((item) =>
      run(async () => {
        if (failure) return;
        try {
          if (signal.aborted) throw signal.reason;
          await work(item);
        } catch (error) {
          failure ??= { error };
        }
      }),
    ),
  );
  if (failure) throw failure.error;
}

/** `[0, n)` split into consecutive batches of `size`. */
export function batches(n: number, size: number): { index: number; start: number; end: number }[] {
  const out: { index: number; start: number; end: number }[] = [];
  for (let start = 0, index = 0; start < n; start += size, index++) out.push({ index, start, end: Math.min(n, start + size) });
  return out;
}
