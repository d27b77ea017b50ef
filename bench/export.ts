/**
 * Reads of finished screening jobs through the gateway, each streamed from the job's artifact: the
 * CSV and JSON Lines exports, the event stream's end event, the validation route and the methods
 * report. For each read: the time to its first byte beside the time to its last (the goal: the
 * first byte within 10% of the whole), and the gateway's and the screening worker's resident
 * memory growth while it streams (the goal: at most 32 MB for the gateway, whatever the job's size).
 * A small job (the baseline, measured in the same run) and a large one.
 *
 *   npm run bench -- export             (default sizes 2000,20000, each read BENCH_ROUNDS=2 times)
 *   npm run bench -- export --sizes 2000,50000     (or BENCH_SIZES; the issue's 50,000-paper case)
 *
 * Jobs are mock jobs (deterministic answers, no provider), so the figures measure the read path
 * only: the gateway reads the artifact's chunks one at a time and passes each on before reading
 * the next; the worker is not asked. Memory is VmRSS from /proc, sampled every 10 ms from just
 * before the request until the last byte arrived; the client counts the bytes and keeps none.
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
  read: string;
  mb: number;
  firstByte: number;
  seconds: number;
  growth: Record<keyof typeof pids, number>;
  peak: Record<keyof typeof pids, number>;
}
const results: Row[] = [];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const auth = { authorization: `Bearer ${TEST_API_KEY}` };

/** One read, streamed to its end: bytes, lines, time to the first and to the last byte, and memory while it ran. */
async function measureRead(url: string, init: RequestInit = {}) {
  const before = { gateway: rssMb(pids.gateway), worker: rssMb(pids.worker) };
  const peak = { ...before };
  const sampler = setInterval(() => {
    for (const key of Object.keys(pids) as (keyof typeof pids)[]) peak[key] = Math.max(peak[key], rssMb(pids[key]));
  }, 10);
  const started = performance.now();
  const res = await fetch(url, { ...init, headers: { ...auth, ...init.headers } });
  if (res.status !== 200) throw new Error(`${url} failed: ${res.status} ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  let firstByte = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    if (bytes === 0) firstByte = (performance.now() - started) / 1000;
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines++;
  }
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  return { bytes, lines, firstByte, seconds, peak, growth: { gateway: peak.gateway - before.gateway, worker: peak.worker - before.worker } };
}

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
    const job = `${stack.baseUrl}/v1/screening/jobs/${id}`;
    // The report answers 409 until the job has finished.
    await waitFor(async () => {
      const report = await fetch(`${job}/report?format=json`, { headers: auth });
      const body = (await report.json()) as { status?: string };
      if (report.status === 200 && body.status !== "completed") throw new Error(`job ended ${body.status}`);
      return report.status === 200;
    }, 600_000, 500);
    await new Promise((r) => setTimeout(r, 1_000)); // let the worker settle after writing the job's artifact
    const labels = Array.from({ length: Math.min(size, 500) }, (_, i) => ({ id: `p${i + 1}`, included: i % 4 === 0 }));
    const reads: [string, string, RequestInit?][] = [
      ["csv export", `${job}/export?format=csv`],
      ["jsonl export", `${job}/export?format=jsonl`],
      ["end event", `${job}/events`],
      ["validation", `${job}/validation`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ labels }) }],
      ["report", `${job}/report`],
    ];
    // The same reads more than once: memory that a read kept would show as a rising peak.
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [read, url, init] of reads) {
        const measured = await measureRead(url, init);
        const row: Row = { round, papers: size, read, mb: measured.bytes / 1e6, firstByte: measured.firstByte, seconds: measured.seconds, peak: measured.peak, growth: measured.growth };
        results.push(row);
        console.log(
          `${String(size).padStart(6)} papers, ${read.padEnd(12)} ${round}: ${row.mb.toFixed(1).padStart(5)} MB, first byte ${(row.firstByte * 1000).toFixed(0)} ms of ${(row.seconds * 1000).toFixed(0)} ms (${((100 * row.firstByte) / row.seconds).toFixed(1)}%); ` +
            `gateway RSS +${row.growth.gateway.toFixed(1)} MB (peak ${row.peak.gateway.toFixed(0)}), worker RSS +${row.growth.worker.toFixed(1)} MB`,
        );
        if (read === "csv export" && measured.lines - 1 !== size) throw new Error(`expected ${size} rows, got ${measured.lines - 1}`);
      }
    }
  }
  const largest = Math.max(...sizes);
  const last = results.filter((r) => r.papers === largest && r.round === ROUNDS);
  const csv = last.find((r) => r.read === "csv export")!;
  console.log(
    `\n${largest} papers: CSV export first byte at ${((100 * csv.firstByte) / csv.seconds).toFixed(1)}% of the whole export's time (goal ≤ 10%); ` +
      `gateway RSS growth during ${last.map((r) => `${r.read} +${r.growth.gateway.toFixed(1)}`).join(", ")} MB (goal ≤ 32 MB each)`,
  );
} finally {
  await stack.stop();
}
