/**
 * Large valid bodies and the gateway's event loop (issue 30): `/health` latency, probed at a fixed
 * pace (every 10 ms, not waiting for the previous answer, so a stalled loop shows in every probe
 * sent while it lasts), first with no other traffic (the baseline, this run, this machine), then
 * while one key sends 5 valid screening creations a second, each just under MAX_JSON_VALUES
 * (20,000 papers with keys the contract strips; no screening service runs, so each is parsed,
 * limit-checked and validated, then answered 503). Goal: p99 under 100 ms.
 *
 *   npm run bench -- bodies [--seconds 4] [--rate 5]
 */
import { Worker } from "node:worker_threads";
import { startStack, TEST_API_KEY } from "../test/support/stack";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const SECONDS = flag("--seconds", 4);
const RATE = flag("--rate", 5);

const PACED_PROBER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const latencies = [];
const inFlight = new Set();
let failed = 0;
const probe = () => {
  const started = performance.now();
  const done = new Promise((resolve) => {
    http.get(workerData.url + "/health", { agent }, (res) => {
      res.resume();
      res.on("end", () => { if (res.statusCode === 200) latencies.push(performance.now() - started); else failed++; resolve(); });
    }).on("error", () => { failed++; resolve(); });
  });
  inFlight.add(done);
  done.then(() => inFlight.delete(done));
};
const timer = setInterval(probe, 10);
parentPort.on("message", async () => {
  clearInterval(timer);
  await Promise.all(inFlight);
  agent.destroy();
  parentPort.postMessage({ latencies, failed });
});
`;

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)] ?? NaN;

/** Probes /health for `ms` while `load` runs. */
async function probed(url: string, ms: number, load: () => Promise<unknown> = async () => undefined) {
  const prober = new Worker(PACED_PROBER, { eval: true, workerData: { url } });
  const result = new Promise<{ latencies: number[]; failed: number }>((resolve) => prober.once("message", resolve));
  await Promise.all([load(), new Promise((r) => setTimeout(r, ms))]);
  prober.postMessage("stop");
  const { latencies, failed } = await result;
  await prober.terminate();
  return { probes: latencies.length, failed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) };
}

const stack = await startStack({ services: {} });
try {
  const extra = Object.fromEntries(Array.from({ length: 45 }, (_, k) => [`k${k}`, k]));
  const papers = Array.from({ length: 20_000 }, (_, i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: "A trial.", ...extra }));
  const body = JSON.stringify({ papers, mock: true });
  const statuses: Record<number, number> = {};
  const send = async () => {
    const answers: Promise<void>[] = [];
    for (let sent = 0; sent < SECONDS * RATE; sent++) {
      answers.push(
        fetch(`${stack.baseUrl}/v1/screening/jobs`, { method: "POST", headers: { "x-api-key": TEST_API_KEY, "content-type": "application/json" }, body }).then(async (res) => {
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        }),
      );
      await new Promise((r) => setTimeout(r, 1000 / RATE));
    }
    await Promise.all(answers);
  };
  const baseline = await probed(stack.baseUrl, SECONDS * 1000);
  const loaded = await probed(stack.baseUrl, SECONDS * 1000, send);
  console.log(`bodies: ${SECONDS * RATE} of ${(body.length / 1e6).toFixed(1)} MB (${RATE} a second, one key); answers ${JSON.stringify(statuses)} (503: validated, no screening service)`);
  console.log(`${"/health every 10 ms".padEnd(28)}  ${"probes".padStart(6)}  ${"p50 ms".padStart(7)}  ${"p99 ms".padStart(7)}  ${"max ms".padStart(7)}`);
  for (const [name, r] of [["no other traffic", baseline], ["with the bodies", loaded]] as const) {
    console.log(`${name.padEnd(28)}  ${String(r.probes).padStart(6)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}  ${r.max.toFixed(1).padStart(7)}${r.failed ? `  (${r.failed} failed)` : ""}`);
  }
  console.log(`p99 with the bodies: ${loaded.p99.toFixed(1)} ms (goal < 100 ms; ${(loaded.p99 / baseline.p99).toFixed(1)}× the baseline's)`);
} finally {
  await stack.stop();
}
