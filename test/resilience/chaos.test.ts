import { describe, expect, it } from "vitest";
import { runChaos } from "./chaos/run";
import { KNOWN_OPEN } from "./chaos/known-open";
import type { Violation } from "./chaos/checker";

/**
 * The chaos checker in `npm test` (the long run is `npm run bench -- chaos`; docs/resilience.md): screening
 * and indexer jobs across four projects of two owners, live against the fake provider, while a
 * nemesis (two overlapping lanes of faults) SIGKILLs, SIGSTOPs and restarts gateway and worker
 * processes, partitions one process at a time from NATS (a worker past its lease: the split-lease
 * case), restarts nats-server (and stops MongoDB when MONGO_URL is set). Clients follow lost
 * creations up by listing, and list all along. The checker (test/resilience/chaos/checker.ts) reads
 * the recorded history; its figures are printed whatever the outcome, and the run's logs and
 * history are kept when it finds a violation. The second case runs the same against three
 * clustered nats-servers with NATS_REPLICAS=3, whose nemesis kills JetStream leaders.
 */

const JOBS = 20;
const FAULTS = 10;
const CLUSTER_JOBS = 12;
const CLUSTER_FAULTS = 6;
/** A run slowed by its faults gets no more than this many (the bench's long runs have no cap). */
const CLUSTER_MAX_FAULTS = 10;

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

  // The production topology: three clustered nats-servers, every stream and bucket with three
  // replicas. The nemesis kills the JetStream meta leader and stream leaders (restarting them on
  // their stores) and pauses servers, beside the process kills and pauses.
  it(`on a 3-node NATS cluster (NATS_REPLICAS=3): ${CLUSTER_JOBS}+ jobs through ${CLUSTER_FAULTS}+ faults with leader kills, same invariants`, async () => {
    const seed = Number(process.env.CHAOS_SEED) || Math.floor(Math.random() * 1_000_000);
    const run = await runChaos({ jobs: CLUSTER_JOBS, faults: CLUSTER_FAULTS, maxFaults: CLUSTER_MAX_FAULTS, maxMs: 75_000, projects: 2, seed, natsCluster: true, tolerate: KNOWN_OPEN });
    console.log(
      `${run.report}\n[chaos] at most ${run.maxOverlap} faults at once; ${run.takeovers} stale run(s) found their job taken over and stopped\n` +
        `[chaos] wall time ${(run.wallMs / 1000).toFixed(1)} s; seed ${seed} (CHAOS_SEED=${seed} replays the nemesis' choices)`,
    );
    const by = run.result.figures.faultsBy;
    expect(run.jobs, "jobs accepted").toBeGreaterThanOrEqual(CLUSTER_JOBS);
    expect(run.faults, "faults healed").toBeGreaterThanOrEqual(CLUSTER_FAULTS);
    expect((by["meta-leader-kill"] ?? 0) + (by["stream-leader-kill"] ?? 0), "leader kills").toBeGreaterThanOrEqual(1);
    // nats-server 2.9.10 can elect a stream leader that lacks writes the cluster acknowledged (a
    // "rewind", which the run's watch of every server's streams reports). Lost progress that one
    // gateway had shown may then read as progress going backwards through another while the job's
    // worker is down (1 run in 20 of this size): the server's fault, not ours. Only that invariant,
    // only in a run where a rewind was seen, and reported (docs/resilience.md, "Open findings").
    const serverFault = (v: Violation) => v.invariant === "progress-backwards" && run.rewinds > 0;
    for (const v of run.result.violations.filter(serverFault)) console.log(`[chaos] after ${run.rewinds} stream rewind(s) of nats-server: ${v.invariant} ×${v.count}: ${v.examples.join("; ")}`);
    expect(run.result.violations.filter((v) => !serverFault(v)), `logs and history.jsonl kept in ${run.dir}`).toEqual([]);
  }, 300_000);
});
