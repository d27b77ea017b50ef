import { describe, expect, it } from "vitest";
import { LruCache } from "./lru";

/** A value that stands for a provider: `busy` while its limiter has calls. */
const entry = (name: string) => ({ name, busy: false });

describe("LruCache", () => {
  it("keeps at most the bound of idle entries, dropping the least recently used", () => {
    const cache = new LruCache<string, ReturnType<typeof entry>>(2, (v) => v.busy);
    const a = cache.getOrCreate("a", () => entry("a"));
    cache.getOrCreate("b", () => entry("b"));
    expect(cache.get("a")).toBe(a); // a is now the most recently used
    cache.getOrCreate("c", () => entry("c"));
    expect(cache.size).toBe(2);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe(a);
  });

  it("never forgets an entry in use: evicted while busy, it is still found by its key", () => {
    const cache = new LruCache<string, ReturnType<typeof entry>>(2, (v) => v.busy);
    const a = cache.getOrCreate("a", () => entry("a"));
    a.busy = true;
    for (const key of ["b", "c", "d", "e"]) cache.getOrCreate(key, () => entry(key));
    // Over the bound by the one busy entry, not by the idle ones.
    expect(cache.size).toBe(3);
    expect(cache.getOrCreate("a", () => entry("a, again"))).toBe(a);
  });

  it("lets a set-aside entry go once it is idle", () => {
    const cache = new LruCache<string, ReturnType<typeof entry>>(1, (v) => v.busy);
    const a = cache.getOrCreate("a", () => entry("a"));
    a.busy = true;
    cache.getOrCreate("b", () => entry("b"));
    expect(cache.size).toBe(2);
    a.busy = false;
    expect(cache.size).toBe(1);
    expect(cache.getOrCreate("a", () => entry("a, fresh")).name).toBe("a, fresh");
  });
});
