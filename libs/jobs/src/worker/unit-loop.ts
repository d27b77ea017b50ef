import pLimit from "p-limit";
import { forEachLimited } from "./for-each-limited";
import type { JobContext } from "./types";

/** What a unit loop needs of the running job. */
export type UnitLoopJob = Pick<JobContext, "signal" | "checkpoints" | "leaseHeld">;

/** How one pass over a stage's units restores, runs and settles each of them. */
export interface UnitLoop<U, V> {
  /** The units in order: an array (restored up front), or a stream read only as slots free (restored as read). */
  units: Iterable<U> | AsyncIterable<U>;
  /** Units running (`run`, its provider calls) at once at most; saving and settling do not count. */
  concurrency: number;
  /**
   * A window of calls shared with other loops of the job running at the same time (stages that
   * overlap), used instead of one of `concurrency` slots of the loop's own. A `run` must not wait
   * on the same window from inside it.
   */
  calls?: <T>(call: () => Promise<T>) => Promise<T>;
  /**
   * Keep the unit's slot until it is saved and settled: for a job whose settle checks a cost
   * ceiling, so that at most `concurrency` calls are in flight when one crosses it. Otherwise the
   * slot frees once the call returns.
   */
  settleInSlot?: boolean;
  /** The unit's checkpoint key; keep it stable, a redelivered job of an older version restores by it. */
  key(unit: U): string;
  /** Whether a saved value still fits the unit (e.g. one answer per item); one that does not is run again. */
  fits?(saved: V, unit: U): boolean;
  /**
   * The unit's work (one provider call); its value is saved as the checkpoint. `signal` fires with
   * the job's and at the loop's first failure: a call that stops on it is not saved.
   */
  run(unit: U, signal: AbortSignal): Promise<V>;
  /** The unit is done: called after its checkpoint is saved, so a unit is paid once. A throw ends the loop. */
  settle(unit: U, value: V, how: { restored: boolean }): void | Promise<void>;
  /** Once restoring is over, before any unit runs: after the restore pass for an array, at once for a stream. */
  restored?(): void | Promise<void>;
}

/**
 * One stage's checkpoints, loaded once, and the loop every checkpointed stage runs: per unit, restore
 * the saved value if it fits, else run it and save the value, then settle it; at most `concurrency`
 * running, stopped by the first failure (after the calls in flight settle) or the job's signal.
 * A unit's slot is freed once its call returns: its checkpoint write and settling overlap the next
 * call, so a slow write never leaves the provider budget idle (as many units again may be saving).
 * A stage may run several loops over disjoint keys (e.g. map, then reduce levels) on one load.
 * A stream of units is read only as slots free, so its chunks set no barrier: the next unit starts
 * as soon as any call ends.
 */
export class CheckpointedStage<V> {
  private constructor(
    private readonly job: UnitLoopJob,
    readonly stage: string,
    private readonly saved: Map<string, V>,
  ) {}

  static async open<V>(job: UnitLoopJob, stage: string): Promise<CheckpointedStage<V>> {
    return new CheckpointedStage(job, stage, await job.checkpoints.load<V>(stage));
  }

  /**
   * Every saved value not yet restored, taken out of the stage at once, by key: for a stage whose
   * values stand on their own (they need no unit to restore), so that all of them count before
   * anything runs. The caller then leaves those units out of its loops.
   */
  takeSaved(): Map<string, V> {
    const saved = new Map(this.saved);
    this.saved.clear();
    return saved;
  }

  async run<U>(loop: UnitLoop<U, V>): Promise<void> {
    const fits = loop.fits ?? (() => true);
    // Taken out of the map once looked at: it is never needed again, and the map only shrinks.
    const take = (unit: U): V | undefined => {
      const key = loop.key(unit);
      const saved = this.saved.get(key);
      this.saved.delete(key);
      return saved !== undefined && fits(saved, unit) ? saved : undefined;
    };
    const failed = new AbortController();
    const signal = AbortSignal.any([this.job.signal, failed.signal]);
    const calls = loop.calls ?? window(loop.concurrency);
    const work = async (unit: U): Promise<void> => {
      try {
        const saved = take(unit);
        if (saved !== undefined) return await loop.settle(unit, saved, { restored: true });
        const finish = async (value: V) => {
          await this.job.checkpoints.save(this.stage, loop.key(unit), value);
          await loop.settle(unit, value, { restored: false });
        };
        const value = await calls(async () => {
          signal.throwIfAborted(); // a unit that waited for a slot starts nothing after a failure
          try {
            // A run cut off from NATS calls nothing once its job may have passed to another run.
            await this.job.leaseHeld();
            signal.throwIfAborted();
            const value = await loop.run(unit, signal);
            if (loop.settleInSlot) await finish(value);
            return value;
          } catch (error) {
            failed.abort(error); // before the slot frees: the unit waiting for it must see the failure
            throw error;
          }
        });
        if (!loop.settleInSlot) await finish(value);
      } catch (error) {
        failed.abort(error);
        throw error;
      }
    };

    if (!isIterable(loop.units)) {
      await loop.restored?.();
      return forEachLimited(loop.units, 2 * loop.concurrency, this.job.signal, work);
    }
    const pending: U[] = [];
    for (const unit of loop.units) {
      const saved = take(unit);
      if (saved === undefined) pending.push(unit);
      else await loop.settle(unit, saved, { restored: true });
    }
    await loop.restored?.();
    await forEachLimited(pending, 2 * loop.concurrency, this.job.signal, work);
  }
}

/** A window of `size` calls in flight. */
function window(size: number): <T>(call: () => Promise<T>) => Promise<T> {
  const limit = pLimit(Math.max(1, size));
  return (call) => limit(call);
}

function isIterable<U>(units: Iterable<U> | AsyncIterable<U>): units is Iterable<U> {
  return Symbol.iterator in units;
}
