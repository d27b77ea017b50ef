/**
 * The long chaos run: the same workload, nemesis (partitions and overlapping faults included) and
 * checker as test/resilience/chaos.test.ts, longer (docs/resilience.md, "Chaos checker").
 *
 *   npm run bench -- chaos [--jobs 200] [--faults 100] [--projects 6] [--seed N] [--max-minutes 30] [--keep]
 *                              [--nats-cluster]
 *
 * `--nats-cluster` runs against three clustered nats-servers with NATS_REPLICAS=3 (`npm test` runs a
 * small one: 12 jobs, 6 faults), where a probe's acknowledged writes are read back at the end.
 *
 * The same knobs by environment: CHAOS_JOBS, CHAOS_FAULTS, CHAOS_PROJECTS, CHAOS_SEED,
 * CHAOS_MAX_MINUTES. `--faults 0` is a clean run (no nemesis). Prints the checker's figures and
 * exits 1 when the history violates an invariant (logs and history.jsonl are then kept).
 */
import { parseArgs } from "node:util";
import { runChaos } from "../test/resilience/chaos/run";

const { values } = parseArgs({
  options: {
    jobs: { type: "string" },
    faults: { type: "string" },
    projects: { type: "string" },
    seed: { type: "string" },
    "max-minutes": { type: "string" },
    keep: { type: "boolean", default: false },
    "nats-cluster": { type: "boolean", default: false },
  },
});

function count(name: keyof typeof values, env: string, fallback: number, min: number, max: number): number {
  const flag = values[name];
  const raw = typeof flag === "string" ? flag : process.env[env];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`--${name} (${env}): expected an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

const jobs = count("jobs", "CHAOS_JOBS", 200, 1, 100_000);
const faults = count("faults", "CHAOS_FAULTS", 100, 0, 100_000);
const projects = count("projects", "CHAOS_PROJECTS", 6, 1, 100);
const seed = count("seed", "CHAOS_SEED", Math.floor(Math.random() * 1_000_000), 0, 2 ** 31);
const maxMinutes = count("max-minutes", "CHAOS_MAX_MINUTES", 30, 1, 24 * 60);

console.log(
  `[chaos] npm run bench -- chaos --jobs ${jobs} --faults ${faults} --projects ${projects} --seed ${seed} --max-minutes ${maxMinutes}${values["nats-cluster"] ? " --nats-cluster" : ""}`,
);
const run = await runChaos({ jobs, faults, projects, seed, maxMs: maxMinutes * 60_000, keep: values.keep, natsCluster: values["nats-cluster"] });
console.log(run.report);
console.log(`[chaos] at most ${run.maxOverlap} faults at once; ${run.takeovers} stale run(s) found their job taken over and stopped`);
console.log(`[chaos] ${run.jobs} jobs accepted, ${run.faults} faults, wall time ${(run.wallMs / 1000).toFixed(1)} s`);
for (const line of run.skipped) console.log(`[chaos] ${line}`);
if (!run.result.valid || values.keep) console.log(`[chaos] logs and history.jsonl: ${run.dir}`);
process.exit(run.result.valid ? 0 : 1);
