/**
 * Start-up time of a service from the image's build output (compiled JavaScript, `node dist/main.js`)
 * against from its TypeScript through tsx (`npm start`'s way), in the same run: the time from spawn
 * until the gateway answers GET /health, against one real nats-server, alternating the two.
 *
 *   npm run bench -- startup     (knobs: BENCH_ROUNDS=5)
 *
 * With `stack`, `npm start` itself on a machine the bench makes busy (bench/support/busy-stack.ts):
 * BENCH_STACK_RUNS starts (10), each interrupted by Ctrl-C once up; it counts the starts that came up
 * and the runs that left nothing behind, against one idle start measured first.
 *
 *   npm run bench -- startup stack     (knobs: BENCH_STACK_RUNS=10, BENCH_BUSY_PER_CORE=2, BENCH_STACK_BOUND_S=900)
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildService, builtServiceArgs } from "../scripts/lib/build";
import { freePort, ROOT, serviceArgs, startNatsServer, stopProcess } from "../scripts/lib/launch";
import { makeBusy, startAndInterrupt, type StackRun } from "./support/busy-stack";
import { knob } from "./support/knobs";

if (process.argv[2] === "stack") await stackUnderLoad();
else await gatewayStartup();

async function stackUnderLoad(): Promise<void> {
  const runs = knob("BENCH_STACK_RUNS", 10);
  const bound = knob("BENCH_STACK_BOUND_S", 900);
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const line = (run: StackRun) => `${run.up ? `up after ${s(run.startMs)}` : `NOT up after ${s(run.startMs)}`}, stopped in ${s(run.stopMs)}, ${run.left} process(es) and ${run.portsHeld} port(s) left`;
  const idle = await startAndInterrupt(bound);
  console.log(`idle machine (baseline): ${line(idle)}`);
  const stopBusy = makeBusy(knob("BENCH_BUSY_PER_CORE", 2));
  const busy: StackRun[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      busy.push(await startAndInterrupt(bound));
      console.log(`busy run ${i + 1}: ${line(busy.at(-1)!)}`);
    }
  } finally {
    stopBusy();
  }
  const up = busy.filter((r) => r.up);
  const clean = busy.filter((r) => r.left === 0 && r.portsHeld === 0);
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
  console.log(`npm start on a busy machine (${knob("BENCH_BUSY_PER_CORE", 2)} CPU-bound processes per core):`);
  console.log(`  came up: ${up.length} of ${runs}; Ctrl-C left nothing behind: ${clean.length} of ${runs}`);
  console.log(`  start-up median ${s(median(up.map((r) => r.startMs)))} (max ${s(Math.max(...up.map((r) => r.startMs)))}); idle ${s(idle.startMs)}; ratio busy / idle ${(median(up.map((r) => r.startMs)) / idle.startMs).toFixed(2)}×`);
  if (up.length < runs || clean.length < runs) process.exitCode = 1;
}

async function gatewayStartup(): Promise<void> {
  const ROUNDS = knob("BENCH_ROUNDS", 5);
  const work = mkdtempSync(join(tmpdir(), "litrev-startup-"));
  const image = join(work, "gateway");
  // The Dockerfile's production layout: the package with flat production dependencies, then its build.
  execFileSync(
    "pnpm",
    ["--config.inject-workspace-packages=true", "--config.node-linker=hoisted", "--filter", "@litrev/gateway", "deploy", "--prod", "--offline", image],
    { cwd: ROOT, stdio: "ignore" },
  );
  await buildService("gateway", join(image, "dist"));
  rmSync(join(image, "src"), { recursive: true, force: true });
  rmSync(join(image, "node_modules/@litrev"), { recursive: true, force: true });

  const nats = await startNatsServer({ storeDir: join(work, "nats") });

  async function startUntilHealthy(args: string[], cwd: string): Promise<number> {
    const port = await freePort();
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, NATS_URL: nats.url, PORT: String(port), API_KEY: "startup-bench-key-0123456789", JOB_KEY_SECRET: "startup-bench-job-key-secret-0123456789", OTEL_SERVICE_NAME: "litrev-gateway", LOG_LEVEL: "warn" };
    const started = performance.now();
    const child: ChildProcess = spawn(process.execPath, args, { cwd, env, stdio: "ignore" });
    try {
      for (;;) {
        if (child.exitCode !== null) throw new Error(`gateway exited with ${child.exitCode}`);
        const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
        if (ok) return performance.now() - started;
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await stopProcess(child);
    }
  }

  const compiled: number[] = [];
  const source: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so a warm page cache favours neither.
      if (round % 2) source.push(await startUntilHealthy(serviceArgs("gateway"), ROOT));
      compiled.push(await startUntilHealthy(builtServiceArgs("dist"), image));
      if (!(round % 2)) source.push(await startUntilHealthy(serviceArgs("gateway"), ROOT));
    }
  } finally {
    await nats.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`gateway start-up until GET /health answers, median of ${ROUNDS}:`);
  console.log(`  TypeScript through tsx:   ${median(source).toFixed(0)} ms  (${source.map((v) => v.toFixed(0)).join(", ")})`);
  console.log(`  compiled (image's build): ${median(compiled).toFixed(0)} ms  (${compiled.map((v) => v.toFixed(0)).join(", ")})`);
  console.log(`  ratio tsx / compiled: ${(median(source) / median(compiled)).toFixed(2)}×`);
}
