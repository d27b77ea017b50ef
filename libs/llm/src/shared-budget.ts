/**
 * One provider key's budget shared by every replica that calls with it. Each replica is a member
 * of the key's budget; the members, in one order all of them see, split the key's concurrency
 * (the first `concurrency % members` take one more) and its rates (each an equal part). The
 * membership itself lives in NATS (libs/messaging provider-budgets.ts); this side only applies it.
 *
 * Every member gets at least one call in flight, or its jobs would stall: the budget therefore
 * holds while members ≤ the key's concurrency, which the worker autoscalers' upper bounds respect
 * (docs/operations.md § Provider budgets across replicas).
 */
export interface BudgetShare {
  /** This member's place in the members' common order, from 0. */
  index: number;
  members: number;
  /** Calls this replica may have in flight now, when the members claim their shares (a key's first use stays within its concurrency); absent: `shareOf`. */
  limit?: number;
}

/** Where a replica joins a key's budget and hears its share whenever the members change. */
export interface SharedBudgets {
  /**
   * Joins the budget of the key whose SHA-256 is `keyDigest` (idempotent) and reports this replica's
   * share now and on every change. The key itself never leaves the process.
   */
  join(keyDigest: string, onShare: (share: BudgetShare) => void, claims?: { concurrency: number; inFlight: () => number }): void;
}

/** This member's part of `total`: an equal split, the remainder to the first members, never below one. */
export function shareOf(total: number, share: BudgetShare): number {
  const members = Math.max(1, share.members);
  const part = Math.floor(total / members) + (share.index < total % members ? 1 : 0);
  return Math.max(1, part);
}
