import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, ROOT } from "../../scripts/lib/launch";
import { processesWithEnv } from "../../scripts/lib/leftover";
import { portProblem } from "../../scripts/lib/ports";

/**
 * `npm start` on a machine made busy by the bench itself (BENCH_BUSY_PER_CORE CPU-bound processes per
 * core, 2 by default): each run starts the stack with package.json's own command, waits for its
 * "press Ctrl-C" line, sends SIGINT to its process group as a terminal does, and then looks for any
 * process the run started (by an environment mark, /proc) and for PORT and NATS_PORT still held.
 * One idle run first is the baseline its start-up times are compared with.
 */

export interface StackRun {
  up: boolean;
  startMs: number;
  stopMs: number;
  left: number;
  portsHeld: number;
}

const START = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;

export async function startAndInterrupt(boundS: number): Promise<StackRun> {
  const mark = randomUUID();
  const entry = `LITREV_STACK_RUN=${mark}`;
  const [port, natsPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(join(tmpdir(), "litrev-bench-stack-"));
  const started = performance.now();
  const child = spawn("sh", ["-c", START], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: "", HOST: "", MONGO_URL: "", LOG_LEVEL: "warn", STACK_DATA_DIR: dataDir, PORT: String(port), NATS_PORT: String(natsPort), STACK_START_TIMEOUT_S: String(boundS), LITREV_STACK_RUN: mark },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, "exit");
  while (!output.includes("[stack] press Ctrl-C to stop") && child.exitCode === null && child.signalCode === null) await new Promise((done) => setTimeout(done, 100));
  const up = output.includes("[stack] press Ctrl-C to stop");
  const startMs = performance.now() - started;
  const stopping = performance.now();
  if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGINT");
  await Promise.race([exited, new Promise((done) => setTimeout(done, 120_000))]);
  let left = processesWithEnv(entry);
  for (let waited = 0; left.length > 0 && waited < 5_000; waited += 250) {
    await new Promise((done) => setTimeout(done, 250));
    left = processesWithEnv(entry);
  }
  const stopMs = performance.now() - stopping;
  const portsHeld = (await Promise.all([portProblem(port, "127.0.0.1"), portProblem(natsPort, "127.0.0.1")])).filter(Boolean).length;
  for (const pid of left) process.kill(pid, "SIGKILL");
  if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
  if (!up) console.log(`  a run that did not come up:\n${output.trim().split("\n").slice(-5).join("\n")}`);
  return { up, startMs, stopMs, left: left.length, portsHeld };
}

/** CPU-bound processes, `perCore` per core; the returned function stops them. */
export function makeBusy(perCore: number): () => void {
  const spinners: ChildProcess[] = Array.from({ length: availableParallelism() * perCore }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  return () => {
    for (const spinner of spinners) spinner.kill("SIGKILL");
  };
}
