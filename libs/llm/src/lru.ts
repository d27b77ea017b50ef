import { LRUCache } from "lru-cache";

/**
 * A least-recently-used map (lru-cache) that never forgets a value still in use. An entry evicted
 * while `inUse` holds (a provider whose limiter has calls in flight or queued) is set aside, still
 * found by its key, until it is seen idle; the count may briefly exceed the bound rather than give
 * two calls under one key two limiters.
 */
export class LruCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly recent: LRUCache<K, V>;
  /** Evicted while in use: no more entries than are in use at once. */
  private readonly evictedInUse = new Map<K, V>();

  constructor(
    maxEntries: number,
    private readonly inUse: (value: V) => boolean = () => false,
  ) {
    this.recent = new LRUCache<K, V>({
      max: Math.max(1, maxEntries),
      // Called synchronously as lru-cache evicts, so the entry is never unreachable in between.
      dispose: (value, key, reason) => {
        if (reason === "evict" && this.inUse(value)) this.evictedInUse.set(key, value);
      },
    });
  }

  get size(): number {
    this.dropIdle();
    return this.recent.size + this.evictedInUse.size;
  }

  get(key: K): V | undefined {
    const value = this.recent.get(key);
    if (value !== undefined) return value;
    const kept = this.evictedInUse.get(key);
    if (kept === undefined) return undefined;
    // Used again: back in the cache as the most recently used entry.
    this.evictedInUse.delete(key);
    this.recent.set(key, kept);
    return kept;
  }

  getOrCreate(key: K, create: () => V): V {
    this.dropIdle();
    const existing = this.get(key);
    if (existing !== undefined) return existing;
    const value = create();
    this.recent.set(key, value);
    return value;
  }

  private dropIdle(): void {
    for (const [key, value] of this.evictedInUse) if (!this.inUse(value)) this.evictedInUse.delete(key);
  }
}
