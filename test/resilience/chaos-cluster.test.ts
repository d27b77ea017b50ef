import { describe, expect, it } from "vitest";
import { runChaos } from "./chaos/run";
import { KNOWN_OPEN } from "./chaos/known-open";

/**
 * The chaos checker on the production topology (docs/resilience.md, "Chaos checker"): the same
 * workload and checker as chaos.test.ts, against three clustered nats-servers with
 * NATS_REPLICAS=3, while the nemesis SIGKILLs and restarts the JetStream meta leader and stream
 * leaders, pauses servers, and kills and pauses gateway and worker processes. Small here; longer
 * through `pnpm bench chaos --nats-cluster`.
 */

const JOBS = 12;
const FAULTS = 6;

describe("chaos: jobs under a nemesis, on a 3-node NATS cluster", () => {
  it(`${JOBS}+ jobs through ${FAULTS}+ faults with meta and stream leaders killed: the same invariants hold`, async () => {
    const seed = Number(process.env.CHAOS_SEED) || Math.floor(Math.random() * 1_000_000);
    const run = await runChaos({ jobs: JOBS, faults: FAULTS, maxMs: 60_000, projects: 2, seed, natsCluster: true, tolerate: KNOWN_OPEN });
    console.log(`${run.report}\n[chaos-cluster] at most ${run.maxOverlap} faults at once; wall time ${(run.wallMs / 1000).toFixed(1)} s; seed ${seed}`);
    const f = run.result.figures.faultsBy;
    expect(run.jobs, "jobs accepted").toBeGreaterThanOrEqual(JOBS);
    expect(run.faults, "faults healed").toBeGreaterThanOrEqual(FAULTS);
    expect((f["meta-leader-kill"] ?? 0) + (f["stream-leader-kill"] ?? 0) + (f["nats-pause"] ?? 0), "NATS cluster faults").toBeGreaterThanOrEqual(1);
    expect(run.result.violations, `logs and history.jsonl kept in ${run.dir}`).toEqual([]);
  }, 300_000);
});
