/**
 * How far a stage has got, as the longest run of papers [0, n) it has settled (its units finish out
 * of order): the next stage starts a batch once its papers are in it (reasoning after labelling,
 * clustering's map after reasoning), so the stages overlap and the job's window of calls stays full
 * across the change of stage.
 */
export class SettledPrefix {
  private readonly settled: Uint8Array;
  private length = 0;
  private waiters: { upTo: number; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private failure: { error: unknown } | undefined;

  constructor(count: number) {
    this.settled = new Uint8Array(count);
  }

  settle(index: number): void {
    this.settled[index] = 1;
    while (this.length < this.settled.length && this.settled[this.length] === 1) this.length++;
    this.waiters = this.waiters.filter((waiter) => {
      if (waiter.upTo > this.length) return true;
      waiter.resolve();
      return false;
    });
  }

  /** The stage failed: every wait, present and future, rejects with its error. */
  fail(error: unknown): void {
    this.failure = { error };
    for (const waiter of this.waiters) waiter.reject(error);
    this.waiters = [];
  }

  /** Resolves once papers [0, upTo) are settled (one waiter at a time in practice: the next stage reads its batches in order). */
  until(upTo: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (upTo <= this.length) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ upTo, resolve, reject }));
  }
}
