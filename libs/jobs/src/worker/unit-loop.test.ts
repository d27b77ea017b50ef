import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { CheckpointedStage, type UnitLoop } from "./unit-loop";

interface Saved {
  out: number[];
}

/** A job whose checkpoints live in a map, with every load, save and settle written to `events`. */
function fakeJob(saved: Record<string, Saved> = {}, signal = new AbortController().signal) {
  const store = new Map(Object.entries(saved));
  const events: string[] = [];
  let loads = 0;
  const job = {
    signal,
    leaseHeld: async () => undefined,
    checkpoints: {
      load: async <T>() => {
        loads++;
        return new Map(store) as Map<string, T>;
      },
      save: async (stage: string, unit: string, data: unknown) => {
        await delay(1);
        events.push(`save ${stage}/${unit}`);
        store.set(unit, data as Saved);
      },
    },
  };
  return { job, store, events, loads: () => loads };
}

/** Units are item counts; a unit's value doubles each of its items. */
function loop(events: string[], units: Iterable<number> | AsyncIterable<number>, extra: Partial<UnitLoop<number, Saved>> = {}): UnitLoop<number, Saved> {
  return {
    units,
    concurrency: 2,
    key: (n) => `u${n}`,
    fits: (saved, n) => saved.out.length === n,
    run: async (n) => {
      events.push(`run ${n}`);
      await delay(2);
      return { out: Array.from({ length: n }, (_, i) => i * 2) };
    },
    settle: (n, value, how) => void events.push(`settle ${n}${how.restored ? " restored" : ""} ${value.out.length}`),
    ...extra,
  };
}

async function* stream(units: number[]) {
  for (const n of units) {
    await delay(0);
    yield n;
  }
}

describe("CheckpointedStage", () => {
  it("restores the units whose saved value fits, runs the others and saves before it settles them", async () => {
    // u2 fits; u3 was saved for a unit of another size, so it runs again.
    const { job, events, store } = fakeJob({ u2: { out: [0, 2] }, u3: { out: [0] } });
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    await stage.run(loop(events, [1, 2, 3], { restored: () => void events.push("restored") }));
    // An array is restored up front, then the rest runs.
    expect(events.slice(0, 2)).toEqual(["settle 2 restored 2", "restored"]);
    expect(events.filter((e) => e.startsWith("run")).sort()).toEqual(["run 1", "run 3"]);
    for (const n of [1, 3]) expect(events.indexOf(`save s/u${n}`)).toBeLessThan(events.indexOf(`settle ${n} ${n}`));
    expect(store.get("u3")).toEqual({ out: [0, 2, 4] });
  });

  it("restores a stream's units as they are read, and runs several loops on one load", async () => {
    const { job, events, loads } = fakeJob({ u1: { out: [0] } });
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    await stage.run(loop(events, stream([1, 2])));
    await stage.run(loop(events, [4], { key: (n) => `again-${n}` }));
    expect(loads()).toBe(1);
    expect(events).toEqual(["settle 1 restored 1", "run 2", "save s/u2", "settle 2 2", "run 4", "save s/again-4", "settle 4 4"]);
  });

  it("keeps at most `concurrency` units in flight", async () => {
    const { job, events } = fakeJob();
    let active = 0;
    let peak = 0;
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    await stage.run(
      loop(events, stream([1, 2, 3, 4, 5, 6, 7]), {
        concurrency: 3,
        run: async (n) => {
          peak = Math.max(peak, ++active);
          await delay(5);
          active--;
          return { out: [n] };
        },
        fits: () => true,
      }),
    );
    expect(peak).toBe(3);
    expect(events.filter((e) => e.startsWith("settle"))).toHaveLength(7);
  });

  it("frees a unit's call slot once its call returns: a slow checkpoint write does not hold the next call back", async () => {
    const { job, events } = fakeJob();
    job.checkpoints.save = async (stage: string, unit: string) => {
      events.push(`saving ${stage}/${unit}`);
      await delay(40);
      events.push(`saved ${stage}/${unit}`);
    };
    let active = 0;
    let peak = 0;
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    await stage.run(
      loop(events, stream([1, 2, 3]), {
        concurrency: 1,
        run: async (n) => {
          peak = Math.max(peak, ++active);
          events.push(`run ${n}`);
          await delay(2);
          active--;
          return { out: [n] };
        },
        fits: () => true,
      }),
    );
    // Unit 2's call starts while unit 1's checkpoint is still being written; never two calls at once.
    expect(events.indexOf("run 2")).toBeLessThan(events.indexOf("saved s/u1"));
    expect(peak).toBe(1);
    expect(events.filter((e) => e.startsWith("settle"))).toHaveLength(3);
  });

  it("stops at the first failure after the units in flight are saved and settled, and saves nothing of the failed unit", async () => {
    const { job, events, store } = fakeJob();
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    const run = stage.run(
      loop(events, [1, 2, 3, 4, 5], {
        run: async (n) => {
          events.push(`run ${n}`);
          await delay(n === 1 ? 1 : 10);
          if (n === 1) throw new Error("provider down");
          return { out: Array.from({ length: n }, () => 0) };
        },
      }),
    );
    await expect(run).rejects.toThrow("provider down");
    // Unit 2 was in flight when 1 failed: it finished, saved and settled before the loop rejected; nothing more started.
    expect(events).toEqual(["run 1", "run 2", "save s/u2", "settle 2 2"]);
    expect([...store.keys()]).toEqual(["u2"]);
  });

  it("fires run's signal at the first failure, so a call that heeds it stops and is not saved", async () => {
    const { job, events, store } = fakeJob();
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    const run = stage.run(
      loop(events, [1, 2, 3], {
        run: async (n, signal) => {
          events.push(`run ${n}`);
          if (n === 1) {
            await delay(1);
            throw new Error("bad key");
          }
          // Unit 2 would take long; it stops once unit 1 has failed.
          await delay(1_000, undefined, { signal });
          return { out: [n] };
        },
      }),
    );
    await expect(run).rejects.toThrow("bad key");
    expect(events).toEqual(["run 1", "run 2"]);
    expect(store.size).toBe(0);
  });

  it("hands out every saved value at once, leaving none for a loop to restore", async () => {
    const { job, events } = fakeJob({ u1: { out: [0] }, u2: { out: [0, 2] } });
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    expect([...stage.takeSaved().keys()]).toEqual(["u1", "u2"]);
    await stage.run(loop(events, [2]));
    expect(events).toEqual(["run 2", "save s/u2", "settle 2 2"]);
  });

  it("ends the loop when settle throws (a cost ceiling), with the unit saved first", async () => {
    const { job, events, store } = fakeJob();
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    const run = stage.run(
      loop(events, [1, 2, 3], {
        concurrency: 1,
        settle: (n) => {
          if (n === 1) throw new Error("ceiling");
        },
      }),
    );
    await expect(run).rejects.toThrow("ceiling");
    expect(store.has("u1")).toBe(true);
    // Unit 2's call started while unit 1 was being saved (its slot was free).
    expect(events.filter((e) => e.startsWith("run"))).toEqual(["run 1", "run 2"]);
  });

  it("with settleInSlot, a unit keeps its slot until settled: no call starts between a call that crosses a ceiling and its settle", async () => {
    const { job, events, store } = fakeJob();
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    const run = stage.run(
      loop(events, [1, 2, 3], {
        concurrency: 1,
        settleInSlot: true,
        settle: (n) => {
          if (n === 1) throw new Error("ceiling");
        },
      }),
    );
    await expect(run).rejects.toThrow("ceiling");
    expect(store.has("u1")).toBe(true);
    expect(events).toEqual(["run 1", "save s/u1"]);
  });

  it("starts nothing more once the job's signal fires, and rejects with its reason", async () => {
    const abort = new AbortController();
    const { job, events } = fakeJob({}, abort.signal);
    const stage = await CheckpointedStage.open<Saved>(job, "s");
    const run = stage.run(
      loop(events, stream([1, 2, 3, 4]), {
        concurrency: 1,
        run: async (n) => {
          events.push(`run ${n}`);
          if (n === 2) abort.abort(new Error("cancelled"));
          return { out: Array.from({ length: n }, () => 0) };
        },
      }),
    );
    await expect(run).rejects.toThrow("cancelled");
    expect(events.filter((e) => e.startsWith("run"))).toEqual(["run 1", "run 2"]);
  });
});
