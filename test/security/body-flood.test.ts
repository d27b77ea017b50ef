import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, TEST_API_KEY, type Stack } from "../support/stack";
import type { Refusal } from "./support/flood-client";

/**
 * One key holder cannot freeze the shared gateway (issue 23, B1; docs/limits.md). A 99 MB body of
 * `[]` values (in a field the schema would strip) used to be buffered whole and parsed on the
 * gateway's event loop: 6.7 s per request with `/health` waiting as long, and gigabytes of RSS.
 * Here one key streams such bodies from several connections at once (from its own process, at the
 * lowest CPU priority, as if from another machine) while a thread of its own probes `/health`.
 * Every body is refused while it is still being sent, by the pre-scan (413 naming MAX_JSON_VALUES:
 * a parsed body would have reached validation); `/health` stays under 100 ms at p99 and the
 * gateway's RSS under 1 GB throughout.
 */

const CONNECTIONS = 4;
const ATTACK_MS = 3_000;
const MIN_BODIES = 12;

/** Runs the attacker (support/flood-client.ts) at the lowest CPU priority and returns what it printed. */
async function flood(baseUrl: string): Promise<{ refusals: Refusal[]; ms: number; bodyBytes: number }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "support/flood-client.ts");
  const child = spawn("nice", ["-n", "19", process.execPath, "--import", "tsx", script, baseUrl, TEST_API_KEY, String(CONNECTIONS), String(ATTACK_MS), String(MIN_BODIES)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (data: Buffer) => (out += data.toString()));
  child.stderr.on("data", (data: Buffer) => (err += data.toString()));
  const [code] = (await once(child, "close")) as [number | null];
  if (code !== 0) throw new Error(`flood client exited ${code}: ${err.slice(-2000)}`);
  return JSON.parse(out);
}

/** Probes `GET /health` back to back from its own thread until told to stop. */
const PROBER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let stop = false;
parentPort.on("message", () => (stop = true));
const probe = () => new Promise((resolve, reject) => {
  const started = performance.now();
  http.get(workerData.url + "/health", { agent }, (res) => {
    res.resume();
    res.on("end", () => resolve({ ms: performance.now() - started, status: res.statusCode }));
  }).on("error", reject);
});
(async () => {
  const statuses = {};
  while (!stop) {
    const { ms, status } = await probe();
    latencies.push(ms);
    statuses[status] = (statuses[status] || 0) + 1;
    await new Promise((r) => setImmediate(r));
  }
  agent.destroy();
  parentPort.postMessage({ latencies, statuses });
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;

describe("a flood of tiny JSON values from one key", () => {
  let stack: Stack;

  beforeAll(async () => {
    // The gateway alone is enough: nothing of the flood may reach a service.
    stack = await startStack({ services: {} });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("is refused before it is parsed whole, while /health stays under 100 ms at p99 and RSS under 1 GB", async () => {
    const gatewayPid = stack.processes.find((p) => p.name === "gateway")!.child.pid!;
    const rssBefore = rssMb(gatewayPid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(gatewayPid))), 50);
    const prober = new Worker(PROBER, { eval: true, workerData: { url: stack.baseUrl } });
    const probed = new Promise<{ latencies?: number[]; statuses?: Record<string, number>; error?: string }>((resolve) => prober.once("message", resolve));

    let attack: Awaited<ReturnType<typeof flood>>;
    try {
      await new Promise((r) => setTimeout(r, 200)); // the prober's first probes, before the flood
      attack = await flood(stack.baseUrl);
      await new Promise((r) => setTimeout(r, 200)); // and a few after it
    } finally {
      prober.postMessage("stop");
      clearInterval(sampler);
    }
    const { latencies = [], statuses, error } = await probed;
    await prober.terminate();
    rssPeak = Math.max(rssPeak, rssMb(gatewayPid));

    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const { refusals, bodyBytes } = attack;
    const sentMb = refusals.map((r) => Math.round(r.sent / 1024 / 1024));
    console.log(
      `flood: ${refusals.length} bodies of 99 MB in ${attack.ms} ms, answered after ${Math.min(...sentMb)}–${Math.max(...sentMb)} MB sent; ` +
        `/health ${latencies.length} probes, p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms; ` +
        `gateway RSS ${rssBefore.toFixed(0)} → peak ${rssPeak.toFixed(0)} MB`,
    );

    expect(error).toBeUndefined();
    expect(statuses).toEqual({ 200: latencies.length });
    expect(latencies.length).toBeGreaterThanOrEqual(100);
    expect(refusals.length).toBeGreaterThanOrEqual(MIN_BODIES);
    for (const refusal of refusals) {
      expect(refusal.status).toBe(413);
      expect(JSON.parse(refusal.detail)).toEqual({ detail: "Request body holds more than 2,000,000 JSON values (MAX_JSON_VALUES, docs/limits.md)" });
      // Answered while the client was still sending: the body was never received, let alone parsed,
      // whole. (How far it got depends on when this low-priority client gets the CPU to notice.)
      expect(refusal.sent).toBeLessThan(bodyBytes);
    }
    expect(p99).toBeLessThan(100);
    expect(rssPeak).toBeLessThan(1024);
    // And the gateway still serves.
    expect((await stack.http("GET", "/health")).status).toBe(200);
  });
});
