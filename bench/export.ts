/**
 * CSV export of finished screening jobs through the gateway: the screening worker's and the
 * gateway's resident memory while each export streams, for a small job (the baseline, measured in
 * the same run) and a large one. The goal: flat memory, the large job's growth during its export
 * within a few MB of the small one's, whatever the job's size.
 *
  *   npm run bench -- export             (default sizes 2000,20000, each exported BENCH_ROUNDS=2 times: under a minute)
 *   npm run bench -- export --sizes 2000,50000     (or BENCH_SIZES; the 50,000-paper case)
 *
 * Jobs are mock jobs (deterministic answers, no provider), so the figures measure the export path
 * only: the worker reads the stored result chunks one at a time and parks the CSV in parts, and
 * the gateway passes the parts on as it reads them. Memory is VmRSS from /proc, sampled every
 * 10 ms from just before the request until the last byte arrived; the client counts the bytes
 * and rows and keeps none.
 */
import { readFileSync } from "node:fs";
import { startStack, TEST_API_KEY, waitFor } from "../test/support/stack";

const argv = process.argv.slice(2);
const flag = argv.indexOf("--sizes");
const sizesText = (flag >= 0 ? argv[flag + 1] : argv.find((a) => a.startsWith("--sizes="))?.slice(8)) ?? process.env.BENCH_SIZES ?? "2000,20000";
const sizes = sizesText.split(",").map((v) => Number(v.trim()));
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be positive integers, got ${sizesText}`);

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;

const stack = await startStack({ services: { screening: 1 }, env: { MAX_SCREENING_PAPERS: String(Math.max(...sizes)) } });
const pids = {
  gateway: stack.processes.find((p) => p.name.startsWith("gateway"))!.child.pid!,
  worker: stack.processes.find((p) => p.name.startsWith("screening"))!.child.pid!,
};
interface Row {
  round: number;
  papers: number;
  rows: number;
  mb: number;
  seconds: number;
  growth: Record<keyof typeof pids, number>;
  peak: Record<keyof typeof pids, number>;
}
const results: Row[] = [];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
try {
  for (const size of sizes) {
    const papers = Array.from({ length: size }, (_, i) => ({ id: `p${i + 1}`, title: `Paper ${i + 1}: a trial of reminders for prescribers`, abstract: "Clinicians received reminders; prescribing improved. ".repeat(6) }));
    const criteria = [
      { name: "Population", type: "include", value: "Healthcare professionals" },
      { name: "Intervention", type: "include", value: "A nudge" },
    ];
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria, mock: true, repetitions: 3 });
    if (created.status !== 200) throw new Error(`job creation failed: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.job_id as string;
    // The report answers 409 until the job has finished (and reads no results before).
    await waitFor(async () => {
      const report = await fetch(`${stack.baseUrl}/v1/screening/jobs/${id}/report?format=json`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
      const body = (await report.json()) as { status?: string };
      if (report.status === 200 && body.status !== "completed") throw new Error(`job ended ${body.status}`);
      return report.status === 200;
    }, 600_000, 500);
    await new Promise((r) => setTimeout(r, 1_000)); // let the worker settle after storing the job
    // The same export more than once: memory that an export kept would show as a rising peak.
    for (let round = 1; round <= ROUNDS; round++) {
    const before = { gateway: rssMb(pids.gateway), worker: rssMb(pids.worker) };
    const peak = { ...before };
    const sampler = setInterval(() => {
      for (const key of Object.keys(pids) as (keyof typeof pids)[]) peak[key] = Math.max(peak[key], rssMb(pids[key]));
    }, 10);
    const started = performance.now();
    const res = await fetch(`${stack.baseUrl}/v1/screening/jobs/${id}/export?format=csv`, { headers: { authorization: `Bearer ${TEST_API_KEY}` } });
    if (res.status !== 200) throw new Error(`export failed: ${res.status} ${await res.text()}`);
    let bytes = 0;
    let lines = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const row: Row = {
      round,
      papers: size,
      rows: lines - 1,
      mb: bytes / 1e6,
      seconds,
      peak,
      growth: { gateway: peak.gateway - before.gateway, worker: peak.worker - before.worker },
    };
    results.push(row);
    console.log(
      `${String(size).padStart(6)} papers, export ${round}: ${row.rows} rows, ${row.mb.toFixed(1)} MB in ${seconds.toFixed(2)} s; ` +
        `gateway RSS ${before.gateway.toFixed(0)} → peak ${peak.gateway.toFixed(0)} MB (+${row.growth.gateway.toFixed(1)}), ` +
        `worker RSS ${before.worker.toFixed(0)} → peak ${peak.worker.toFixed(0)} MB (+${row.growth.worker.toFixed(1)})`,
    );
    if (row.rows !== size) throw new Error(`expected ${size} rows, got ${row.rows}`);
    }
  }
  const base = results.find((r) => r.papers === sizes[0] && r.round === ROUNDS)!;
  for (const row of results.filter((r) => r.papers !== base.papers && r.round === ROUNDS)) {
    const ratio = (key: keyof typeof pids) => (row.peak[key] / base!.peak[key]).toFixed(2);
    console.log(
      `${row.papers} vs ${base!.papers} papers (${(row.papers / base!.papers).toFixed(0)}× the rows, ${(row.mb / base!.mb).toFixed(0)}× the bytes): ` +
        `peak RSS ratio gateway ${ratio("gateway")}, worker ${ratio("worker")} (includes what creating the larger job cost); ` +
        `growth during the last export (goal: a few MB, not growing with the job) gateway +${row.growth.gateway.toFixed(1)} vs +${base!.growth.gateway.toFixed(1)} MB, worker +${row.growth.worker.toFixed(1)} vs +${base!.growth.worker.toFixed(1)} MB`,
    );
  }
} finally {
  await stack.stop();
}
