import { describe, expect, it } from "vitest";
import { runChaos } from "./chaos/run";
import { KNOWN_OPEN } from "./chaos/known-open";

/**
 * The chaos checker in `npm test` (the long run is `npm run bench -- chaos`; docs/resilience.md): screening
 * and indexer jobs across four projects of two owners, live against the fake provider, while a
 * nemesis (two overlapping lanes of faults) SIGKILLs, SIGSTOPs and restarts gateway and worker
 * processes, partitions one process at a time from NATS (a worker past its lease: the split-lease
 * case), restarts nats-server (and stops MongoDB when MONGO_URL is set). Clients follow lost
 * creations up by listing, and list all along. The checker (test/resilience/chaos/checker.ts) reads
 * the recorded history; its figures are printed whatever the outcome, and the run's logs and
 * history are kept when it finds a violation.
 */

const JOBS = 20;
const FAULTS = 10;

describe("chaos: jobs under a nemesis", () => {
  it(`${JOBS}+ jobs through ${FAULTS}+ faults: none lost, every item once, never two active jobs per project, terminal jobs readable, bounded repeats`, async () => {
    const seed = Number(process.env.CHAOS_SEED) || Math.floor(Math.random() * 1_000_000);
    const run = await runChaos({ jobs: JOBS, faults: FAULTS, maxMs: 90_000, projects: 4, seed, tolerate: KNOWN_OPEN });
    console.log(
      `${run.report}\n[chaos] at most ${run.maxOverlap} faults at once; ${run.takeovers} stale run(s) found their job taken over and stopped\n` +
        `[chaos] wall time ${(run.wallMs / 1000).toFixed(1)} s; seed ${seed} (CHAOS_SEED=${seed} replays the nemesis' choices)`,
    );
    expect(run.jobs, "jobs accepted").toBeGreaterThanOrEqual(JOBS);
    expect(run.faults, "faults healed").toBeGreaterThanOrEqual(FAULTS);
    expect(run.result.figures.faultsBy["split-lease"], "split-lease faults").toBeGreaterThanOrEqual(1);
    expect(run.result.figures.listings, "listings answered").toBeGreaterThan(0);
    expect(run.result.violations, `logs and history.jsonl kept in ${run.dir}`).toEqual([]);
  }, 300_000);
});
