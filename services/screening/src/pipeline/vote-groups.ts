/**
 * Batch-mates per vote where a provider ignores `n` (each vote of a paper is a request of its own):
 * a labelling unit of `pool × callSize` papers is laid out as a grid of `pool` rows (vote 0's
 * calls) and `callSize` columns, and vote `r` sends the paper at (row, column) in call
 * `(row + r·column) mod pool`. With `pool` a prime no smaller than `callSize` and the repetitions,
 * two papers share a call in at most one vote: an abstract that carries injected instructions
 * reaches each of its neighbours' votes at most once. Every call still holds at most `callSize`
 * papers (one per column), so the number of calls per vote is unchanged for a full unit.
 */

/** The number of calls per vote in a unit: the smallest prime ≥ max(repetitions, callSize). */
export function votePool(repetitions: number, callSize: number): number {
  let candidate = Math.max(2, repetitions, callSize);
  while (!isPrime(candidate)) candidate++;
  return candidate;
}

/** The calls of vote `vote` over a unit of `count` papers: lists of paper indexes, none empty. */
export function voteGroups(count: number, callSize: number, pool: number, vote: number): number[][] {
  const groups: number[][] = Array.from({ length: pool }, () => []);
  for (let i = 0; i < count; i++) {
    const row = Math.floor(i / callSize);
    const column = i % callSize;
    groups[(row + vote * column) % pool]!.push(i);
  }
  return groups.filter((group) => group.length > 0);
}

function isPrime(n: number): boolean {
  for (let d = 2; d * d <= n; d++) if (n % d === 0) return false;
  return n >= 2;
}
