import { describe, expect, it } from "vitest";
import { SettledPrefix } from "./settled-prefix";

describe("SettledPrefix", () => {
  it("resolves a wait once every paper before its end is settled, in whatever order they settle", async () => {
    const prefix = new SettledPrefix(6);
    let done = false;
    const wait = prefix.until(4).then(() => (done = true));
    for (const i of [3, 1, 0]) prefix.settle(i);
    await Promise.resolve();
    expect(done).toBe(false); // paper 2 is still out
    prefix.settle(2);
    await wait;
    expect(done).toBe(true);
    await expect(prefix.until(4)).resolves.toBeUndefined();
  });

  it("rejects waits, present and future, with labelling's error", async () => {
    const prefix = new SettledPrefix(3);
    const wait = prefix.until(2);
    prefix.fail(new Error("ceiling"));
    await expect(wait).rejects.toThrow("ceiling");
    await expect(prefix.until(1)).rejects.toThrow("ceiling");
  });
});
