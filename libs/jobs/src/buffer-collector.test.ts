import { describe, expect, it, vi } from "vitest";
import { BufferCollector, loadCollector } from "./buffer-collector";

describe("BufferCollector", () => {
  it("collects the young generation once per budget of bytes read, not per read", () => {
    const collect = vi.fn();
    const collector = new BufferCollector(collect, 1_000);
    for (const bytes of [400, 400]) collector.read(bytes);
    expect(collect).not.toHaveBeenCalled();
    collector.read(400);
    expect(collect).toHaveBeenCalledTimes(1);
    expect(collect).toHaveBeenCalledWith({ type: "minor" });
    for (let i = 0; i < 10; i++) collector.read(300);
    expect(collect).toHaveBeenCalledTimes(3);
  });

  it("finds V8's collector in a process started without --expose-gc, and it runs", () => {
    const collect = loadCollector();
    expect(typeof collect).toBe("function");
    expect(() => collect!({ type: "minor" })).not.toThrow();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });

  it("reads on without collecting where V8 offers no collector", () => {
    expect(() => new BufferCollector(undefined, 1).read(10)).not.toThrow();
  });
});
