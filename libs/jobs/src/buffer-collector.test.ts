import { describe, expect, it, vi } from "vitest";
import { BufferCollector, loadCollector } from "./buffer-collector";

describe("BufferCollector", () => {
  it("collects the young generation once per budget of bytes read, not per read", () => {
    const collect = vi.fn();
    const load = vi.fn(() => collect);
    const collector = new BufferCollector(load, 1_000);
    for (const bytes of [400, 400]) collector.read(bytes);
    expect(collect).not.toHaveBeenCalled();
    expect(load).not.toHaveBeenCalled(); // nothing set up before the first collection
    collector.read(400);
    expect(collect).toHaveBeenCalledTimes(1);
    expect(collect).toHaveBeenCalledWith({ type: "minor" });
    for (let i = 0; i < 10; i++) collector.read(300);
    expect(collect).toHaveBeenCalledTimes(3);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it("finds V8's collector in a process started without --expose-gc, and it runs", () => {
    const collect = loadCollector();
    expect(typeof collect).toBe("function");
    expect(() => collect!({ type: "minor" })).not.toThrow();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it("reads on without collecting where V8 offers no collector", () => {
    const load = vi.fn(() => undefined);
    const collector = new BufferCollector(load, 1);
    expect(() => [10, 10].forEach((bytes) => collector.read(bytes))).not.toThrow();
    expect(load).toHaveBeenCalledTimes(1);
  });
});
