/**
 * Listing cost of the embedded job store (libs/jobs/src/store/embedded-job-store.ts) against the
 * number of jobs it holds: `listJobs(50)` from a store of 10,000 jobs vs one of 100, both on the
 * same nats-server in the same run (goal: ratio about 1×, ≤ 1.5×).
 *
 *   npm run bench -- listing     (knobs: BENCH_SMALL=100, BENCH_LARGE=10000, BENCH_LIMIT=50, BENCH_CALLS=400)
 *
 * Both stores are filled concurrently, with a tenth of the jobs updated again (running, then
 * completed) so rows are not all fresh. Calls alternate small / large in rounds so background noise
 * hits both alike. Exits non-zero if a listing is not the newest `limit` jobs, newest first.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import pLimit from "p-limit";
import type { JobService } from "../libs/contracts/src/index";
import { EmbeddedJobStore } from "../libs/jobs/src/store/embedded-job-store";
import { toStoredJob, type StoredJob } from "../libs/jobs/src/store/job-store";
import { newJobState } from "../libs/jobs/src/state";
import { startNatsServer } from "../scripts/lib/launch";
import { knob } from "./support/knobs";

const SMALL = knob("BENCH_SMALL", 100);
const LARGE = knob("BENCH_LARGE", 10_000);
const LIMIT = knob("BENCH_LIMIT", 50);
const CALLS = knob("BENCH_CALLS", 400);
const FILL_CONCURRENCY = 64;
const ROUND = 20;

const storeDir = mkdtempSync(join(tmpdir(), "litrev-bench-listing-"));
const server = await startNatsServer({ storeDir });
const nc = await connect({ servers: server.url });

function job(service: JobService, i: number): StoredJob {
  const state = newJobState({
    jobId: `${service}-${String(i).padStart(6, "0")}`,
    service,
    projectId: i % 500,
    modelVersion: "llm-5-nano",
    config: { papers_count: 100 + (i % 50), threshold: 3 },
    estimatedCostUsd: 0.01,
    now: new Date(Date.UTC(2026, 0, 1) + i * 1_000),
  });
  return toStoredJob(state, null, 0);
}

async function fill(service: JobService, count: number): Promise<EmbeddedJobStore> {
  const store = await EmbeddedJobStore.open(nc, service);
  const started = performance.now();
  const limit = pLimit(FILL_CONCURRENCY);
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      limit(async () => {
        const row = job(service, i);
        await store.upsertJob(row);
        if (i % 10 === 0) {
          await store.upsertJob({ ...row, status: "running", progress: 0.5, fence: 1 });
          await store.upsertJob({ ...row, status: "completed", progress: 1, fence: 1 });
        }
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(`filled ${service}: ${count} jobs in ${seconds.toFixed(1)} s (${Math.round(count / seconds)} jobs/s)`);
  return store;
}

function check(service: JobService, count: number, listed: StoredJob[]): void {
  const expected = Array.from({ length: Math.min(LIMIT, count) }, (_, k) => job(service, count - 1 - k).job_id);
  const got = listed.map((j) => j.job_id);
  if (JSON.stringify(got) !== JSON.stringify(expected)) {
    console.error(`${service}: listing is not the newest ${LIMIT} jobs, newest first`, got.slice(0, 5), expected.slice(0, 5));
    process.exitCode = 1;
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

try {
  const small = await fill("screening", SMALL);
  const large = await fill("indexer", LARGE);
  check("screening", SMALL, await small.listJobs(LIMIT));
  check("indexer", LARGE, await large.listJobs(LIMIT));
  for (let i = 0; i < 30; i++) await Promise.all([small.listJobs(LIMIT), large.listJobs(LIMIT)]); // warm-up

  const times = { small: [] as number[], large: [] as number[] };
  for (let done = 0; done < CALLS; done += ROUND) {
    for (const [name, store] of [["small", small], ["large", large]] as const) {
      for (let i = 0; i < ROUND; i++) {
        const t0 = performance.now();
        await store.listJobs(LIMIT);
        times[name].push(performance.now() - t0);
      }
    }
  }
  const figures = Object.fromEntries(
    Object.entries(times).map(([name, values]) => {
      const sorted = [...values].sort((a, b) => a - b);
      return [name, { median: quantile(sorted, 0.5), p95: quantile(sorted, 0.95) }];
    }),
  ) as Record<"small" | "large", { median: number; p95: number }>;
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  console.log(`\nlistJobs(${LIMIT}), ${CALLS} calls each (embedded JetStream store, one nats-server)`);
  console.log(`  ${String(SMALL).padStart(6)} jobs: median ${ms(figures.small.median)}  p95 ${ms(figures.small.p95)}`);
  console.log(`  ${String(LARGE).padStart(6)} jobs: median ${ms(figures.large.median)}  p95 ${ms(figures.large.p95)}`);
  const ratio = figures.large.median / figures.small.median;
  console.log(`  ratio ${LARGE}/${SMALL}: median ${ratio.toFixed(2)}×  p95 ${(figures.large.p95 / figures.small.p95).toFixed(2)}×  (goal ≤ 1.5×: ${ratio <= 1.5 ? "met" : "NOT met"})`);
} finally {
  await nc.close();
  await server.stop();
  rmSync(storeDir, { recursive: true, force: true });
}
