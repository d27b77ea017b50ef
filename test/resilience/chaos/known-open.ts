import type { Invariant } from "./checker";

/**
 * Invariants the chaos runs in `npm test` report without failing, each for a known bug that is
 * still open; remove an entry with the fix that closes it (docs/resilience.md, "Open findings").
 * None is open today: `ghost` and `partitioned-gateway-stale` were closed ("Closed findings").
 */
export const KNOWN_OPEN: Invariant[] = [];

/**
 * On a three-server NATS cluster, besides KNOWN_OPEN: `progress-backwards` — a poll showing less
 * progress than an earlier one, twice after leader kills, once through one gateway whose copy only
 * moves forward by revision (docs/resilience.md, "Open findings"). Reported as TOLERATED in every
 * run's output; the invariants the cluster case is for (none lost, every item once, never two
 * active jobs per project, terminal jobs readable) stay strict.
 */
export const KNOWN_OPEN_CLUSTER: Invariant[] = [...KNOWN_OPEN, "progress-backwards"];
