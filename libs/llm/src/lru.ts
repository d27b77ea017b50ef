/**
 * A small least-recently-used map. Entries for which `canEvict` is false (still in use) are
 * skipped, so the cache may briefly exceed its bound rather than drop state that is in use.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(
    private readonly maxEntries: number,
    private readonly canEvict: (value: V) => boolean = () => true,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // Map keeps insertion order: re-inserting marks the entry most recently used.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  getOrCreate(key: K, create: () => V): V {
    const existing = this.get(key);
    if (existing !== undefined) return existing;
    const value = create();
    this.entries.set(key, value);
    this.evict(key);
    return value;
  }

  private evict(keep: K): void {
    if (this.entries.size <= this.maxEntries) return;
    for (const [key, value] of this.entries) {
      if (this.entries.size <= this.maxEntries) return;
      if (key !== keep && this.canEvict(value)) this.entries.delete(key);
    }
  }
}
