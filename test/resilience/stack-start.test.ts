import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { freePort, ROOT, spawnService } from "../../scripts/lib/launch";
import { processesWithEnv } from "../../scripts/lib/leftover";
import { portProblem } from "../../scripts/lib/ports";
import { startFakeStack } from "../../eval/fake-stack";
import { http, waitFor } from "../support/stack";

/**
 * `npm start` (scripts/stack.ts) with its own nats-server, as a user runs it: a taken PORT or
 * NATS_PORT ends it at once with one line; nats-server `kill -9`ed comes back by itself (same port,
 * same store) and the services reconnect; Ctrl-C (SIGINT to the whole process group, as a terminal
 * sends it) stops the services first and NATS last, without an error line. The stack's data goes to a
 * temporary STACK_DATA_DIR, never .data.
 */

const API_KEY = "stack-start-key-0123456789";
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidsOf = (output: string, name: string): number[] =>
  [...output.matchAll(new RegExp(`\\[stack\\] ${name} started \\(pid (\\d+)\\)`, "g"))].map((m) => Number(m[1]));

interface StackRun {
  child: ChildProcess;
  output: () => string;
}

function runStack(env: NodeJS.ProcessEnv): StackRun {
  // Detached: its own process group, so the test can send SIGINT to the group as a terminal's Ctrl-C does.
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts/stack.ts")], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: "", HOST: "", MONGO_URL: "", API_KEY, LOG_LEVEL: "info", SHUTDOWN_TIMEOUT_MS: "5000", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** Stops a run that is still going (a failed test): its whole process group, NATS included. */
function killRun(run: StackRun | undefined): void {
  if (!run || run.child.exitCode !== null || run.child.signalCode !== null) return;
  process.kill(-run.child.pid!, "SIGKILL");
  for (const name of ["nats-server", "gateway", "criteria", "screening", "indexer"]) for (const pid of pidsOf(run.output(), name)) if (isAlive(pid)) process.kill(pid, "SIGKILL");
}

async function occupy(port: number): Promise<Server> {
  const server = createServer();
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return server;
}

describe("npm start refuses a taken port", () => {
  let dataDir: string;
  let blocker: Server | undefined;
  let run: StackRun | undefined;
  afterEach(async () => {
    killRun(run);
    blocker?.close();
    blocker = undefined;
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const variable of ["PORT", "NATS_PORT"] as const) {
    it(`a busy ${variable}: exit code 78 within seconds, one line naming the port, nothing started`, async () => {
      dataDir = join(mkdtempSync(join(tmpdir(), "litrev-stack-")), "data");
      const [busy, other] = [await freePort(), await freePort()];
      blocker = await occupy(busy);
      const started = Date.now();
      run = runStack({ STACK_DATA_DIR: dataDir, PORT: String(variable === "PORT" ? busy : other), NATS_PORT: String(variable === "PORT" ? other : busy) });
      const code = await Promise.race([once(run.child, "exit").then(([exitCode]) => exitCode as number | null), new Promise((done) => setTimeout(() => done("still running after 15 s"), 15_000))]);
      const lines = run.output().trim().split("\n");
      expect(code).toBe(78);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^\\[stack\\] cannot start: port ${busy} on 127\\.0\\.0\\.1 is already in use \\(${variable}\\)`));
      // Checked before anything else: no data directory, no process started.
      expect(existsSync(dataDir)).toBe(false);
    });
  }
});

describe("the gateway on a taken port", () => {
  it("exits with code 78 (not restarted by npm start) and one line, no stack trace", async () => {
    const port = await freePort();
    const blocker = await occupy(port);
    try {
      const gateway = spawnService(
        "gateway",
        { PORT: String(port), HOST: "127.0.0.1", API_KEY, JOB_KEY_SECRET: "stack-start-secret-0123456789", NATS_URL: `nats://127.0.0.1:${await freePort()}`, LOG_LEVEL: "info" },
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      gateway.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      gateway.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const [code] = await once(gateway, "exit");
      expect(code).toBe(78);
      expect(output).toContain(`cannot listen on 127.0.0.1:${port} (EADDRINUSE); set PORT or HOST`);
      expect(output).not.toMatch(/\n\s+at /);
    } finally {
      blocker.close();
    }
  });
});

// With NATS_URL set, `npm start` runs no nats-server of its own: there is nothing to supervise.
if (process.env.NATS_URL) console.log("[stack-start] nats-server supervision: skipped, NATS_URL points at an external server");
describe.skipIf(Boolean(process.env.NATS_URL))("npm start supervises nats-server", () => {
  let dataDir: string;
  let provider: FakeProvider;
  let run: StackRun;
  let port: number;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "litrev-stack-"));
    // A provider answering the model list, so readiness can be fully green.
    provider = await startFakeProvider({});
    port = await freePort();
    run = runStack({ STACK_DATA_DIR: dataDir, PORT: String(port), NATS_PORT: String(await freePort()), OPENAI_API_KEY: "sk-stack-start", OPENAI_BASE_URL: provider.url });
    await waitFor(() => run.output().includes("[stack] press Ctrl-C to stop") || run.child.exitCode !== null, 90_000, 100);
    if (run.child.exitCode !== null) throw new Error(`npm start exited early:\n${run.output()}`);
  });
  afterAll(async () => {
    killRun(run);
    await provider?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const base = () => `http://127.0.0.1:${port}`;
  const ready = async () => (await http(base(), "GET", "/health/ready", undefined, { auth: false })).status === 200;
  async function mockJobCompletes(): Promise<boolean> {
    const created = await http(base(), "POST", "/v1/screening/jobs", { papers: [{ id: "a", title: "t", abstract: "x" }], mock: true }, { headers: { "x-api-key": API_KEY } });
    if (created.status !== 200) return false;
    const id = (created.body as { job_id: string }).job_id;
    const done = await waitFor(async () => {
      const poll = await http(base(), "GET", `/v1/screening/jobs/${id}`, undefined, { headers: { "x-api-key": API_KEY } });
      const status = (poll.body as { status?: string }).status;
      return status === "completed" || status === "failed" ? status : null;
    }, 20_000, 200);
    return done === "completed";
  }

  it("kill -9 of nats-server: ready again and a new mock job completes within 30 s; Ctrl-C then stops everything cleanly", async () => {
    expect(run.output()).toContain(`[stack] API:  http://localhost:${port}/v1`);
    await waitFor(ready, 30_000, 250);
    expect(await mockJobCompletes()).toBe(true);

    const [nats] = pidsOf(run.output(), "nats-server");
    const killedAt = Date.now();
    process.kill(nats!, "SIGKILL");
    await waitFor(() => /\[stack\] nats-server exited \(signal SIGKILL\) after [\d.]+ s; restart #1 in 500 ms/.test(run.output()), 10_000, 50);
    await waitFor(async () => (await ready()) && (await mockJobCompletes()), 30_000, 250);
    const back = Date.now() - killedAt;
    console.log(`[stack-start] ready and a new mock job completed ${back} ms after kill -9 of nats-server`);
    expect(back).toBeLessThan(30_000);
    const restarted = pidsOf(run.output(), "nats-server").at(-1)!;
    expect(restarted).not.toBe(nats);

    const pids = ["gateway", "criteria", "screening", "indexer"].map((name) => pidsOf(run.output(), name).at(-1)!);
    const before = run.output().length;
    const exited = once(run.child, "exit");
    process.kill(-run.child.pid!, "SIGINT");
    const [code] = await exited;
    const shutdown = run.output().slice(before);
    expect(code).toBe(0);
    expect([...pids, restarted].filter(isAlive)).toEqual([]);
    // No error line: no pino error/fatal, no JetStreamStatusError from a server that went first.
    expect(shutdown).not.toMatch(/"level":(50|60)|Error/);
    expect(shutdown).toContain("[stack] stopped (services first, then nats-server)");
    expect(shutdown).not.toMatch(/restart #|started \(pid/);
  });
});

if (process.env.NATS_URL) console.log("[stack-start] a run killed outright, Ctrl-C during start-up, eval's failed start: skipped, NATS_URL points at an external server (npm start runs no nats-server of its own)");
if (!existsSync("/proc/self/environ")) console.log("[stack-start] Ctrl-C during start-up, eval's failed start: skipped, no /proc to find the processes a run left behind");
describe.skipIf(Boolean(process.env.NATS_URL))("npm start after a run that was killed outright", () => {
  it("stops the nats-server that run left (its own process group outlives it) and starts, instead of finding NATS_PORT taken", { timeout: 420_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "litrev-stack-"));
    // Ports below the ephemeral range: the two runs span seconds, and an ephemeral port that was free
    // may meanwhile be the source port of another suite's connection (CI once: the second run exit 78).
    const env = { STACK_DATA_DIR: dataDir, PORT: String(await freeListenPort()), NATS_PORT: String(await freeListenPort()), LOG_LEVEL: "warn" };
    let first: StackRun | undefined = runStack(env);
    let second: StackRun | undefined;
    try {
      await waitFor(() => first!.output().includes("[stack] nats-server with JetStream") || first!.child.exitCode !== null, 90_000, 50);
      const [left] = pidsOf(first.output(), "nats-server");
      // SIGKILL to npm start's group: the script and its services die at once, no handler runs;
      // nats-server, in a group of its own, is all that survives.
      const killed = once(first.child, "exit");
      process.kill(-first.child.pid!, "SIGKILL");
      await killed;
      expect(isAlive(left!)).toBe(true);

      second = runStack(env);
      await waitFor(() => second!.output().includes("[stack] press Ctrl-C to stop") || second!.child.exitCode !== null, 180_000, 100);
      expect(second.output()).toContain(`[stack] stopped the nats-server (pid ${left}) an earlier run left behind`);
      expect(second.child.exitCode, second.output()).toBeNull();
      expect(isAlive(left!)).toBe(false);
      const exited = once(second.child, "exit");
      process.kill(-second.child.pid!, "SIGINT");
      expect((await exited)[0]).toBe(0);
      first = undefined;
    } finally {
      killRun(second);
      if (first) for (const pid of pidsOf(first.output(), "nats-server")) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

// Linux's /proc finds every process a run left, whatever it printed before it was stopped.
describe.skipIf(!existsSync("/proc/self/environ") || Boolean(process.env.NATS_URL))("Ctrl-C at any moment of npm start's start-up", () => {
  const RUNS = 10;
  // npm start's own command line (package.json), run as npm runs it: Ctrl-C must reach what it starts the same way.
  const start = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;

  it(`SIGINT to the process group at ${RUNS} random moments leaves no process and no port behind`, { timeout: RUNS * 60_000 }, async () => {
    const history: string[] = [];
    const leaks: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const marker = `LITREV_STACK_RUN=${randomUUID()}`;
      const [port, natsPort] = [await freePort(), await freePort()];
      const dataDir = mkdtempSync(join(tmpdir(), "litrev-stack-sigint-"));
      const child = spawn("sh", ["-c", start], {
        cwd: ROOT,
        env: { ...process.env, NATS_URL: "", HOST: "", MONGO_URL: "", API_KEY, LOG_LEVEL: "warn", SHUTDOWN_TIMEOUT_MS: "5000", STACK_DATA_DIR: dataDir, PORT: String(port), NATS_PORT: String(natsPort), LITREV_STACK_RUN: marker.split("=")[1] },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const exited = once(child, "exit");
      // Half the runs anywhere from the first instant (before tsx has loaded), half once nats-server
      // is started (while the services start): the moments a Ctrl-C can catch a process half-made.
      const spawnedAt = Date.now();
      if (run % 2) await waitFor(() => output.includes("[stack] nats-server started") || child.exitCode !== null, 60_000, 20).catch(() => undefined);
      await new Promise((done) => setTimeout(done, Math.random() * (run % 2 ? 4_000 : 8_000)));
      const delay = Date.now() - spawnedAt;
      const stage = (output.match(/\[stack\] [^\n(]*/g) ?? []).at(-1)?.trim() ?? "nothing printed";
      if (child.exitCode === null) process.kill(-child.pid!, "SIGINT");
      const ended = await Promise.race([exited.then(() => true), new Promise<false>((done) => setTimeout(() => done(false), 45_000))]);
      // What is left once npm start has exited (a stop that hangs counts as a leak too).
      let left = processesWithEnv(marker);
      for (let waited = 0; left.length && waited < 5_000; waited += 250) {
        await new Promise((done) => setTimeout(done, 250));
        left = processesWithEnv(marker);
      }
      const ports = (await Promise.all([portProblem(port, "127.0.0.1"), portProblem(natsPort, "127.0.0.1")])).filter(Boolean);
      history.push(`run ${run + 1}: SIGINT after ${delay} ms (last line: ${stage}); ${ended ? `exited ${child.exitCode ?? child.signalCode}` : "still running after 45 s"}; ${left.length} process(es) left; ${ports.length} port(s) held`);
      if (!ended || left.length || ports.length) leaks.push(history.at(-1)!);
      for (const pid of [...left, ...processesWithEnv(marker)]) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      if (!ended) process.kill(-child.pid!, "SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
    console.log(`[stack-start] Ctrl-C at random moments of start-up:\n  ${history.join("\n  ")}`);
    expect(leaks).toEqual([]);
  });
});

// `npm run eval -- … --fake-oracle` starts its own stack (eval/fake-stack.ts): one that fails to come up stops whole.
describe.skipIf(!existsSync("/proc/self/environ") || Boolean(process.env.NATS_URL))("npm run eval stops the local stack it started: one that does not come up, Ctrl-C, SIGTERM", () => {
  const records = [{ id: "a", title: "A trial", abstract: "Adults.", included: true }];
  const rates = { sensitivity: 1, specificity: 1, seed: 1 };
  let marker: string;
  afterEach(() => {
    for (const pid of processesWithEnv(marker)) process.kill(pid, "SIGKILL");
    delete process.env.LITREV_STACK_RUN;
  });
  const withMarker = () => {
    // Every process the stack spawns inherits this environment, nats-server included.
    process.env.LITREV_STACK_RUN = randomUUID();
    marker = `LITREV_STACK_RUN=${process.env.LITREV_STACK_RUN}`;
  };

  it("a process that exits on its configuration: the error reaches the caller and nothing is left running", async () => {
    withMarker();
    // Refused by the gateway and the worker at start-up: nats-server is up by then.
    process.env.LLM_MODEL_CHECK_INTERVAL_MS = "1";
    try {
      // "exited (code 78)", or, on a machine too busy to start the gateway within the bound, the bound.
      await expect(startFakeStack(records, rates)).rejects.toThrow(/exited|within/);
    } finally {
      delete process.env.LLM_MODEL_CHECK_INTERVAL_MS;
    }
    expect(processesWithEnv(marker)).toEqual([]);
  });

  // A terminal's Ctrl-C to eval alone while its stack starts, a CI timeout's SIGTERM while its job runs:
  // eval stops its stack before it exits (its children would otherwise outlive it).
  for (const [signal, moment, line] of [
    ["SIGINT", "while its stack starts", "starting a local stack"],
    ["SIGTERM", "while its job runs", "papers queued"],
  ] as const) {
    it(`${signal} to npm run eval ${moment}: it exits ${128 + (signal === "SIGINT" ? 2 : 15)} and nothing it started is left`, { timeout: 420_000 }, async () => {
      withMarker();
      const out = mkdtempSync(join(tmpdir(), "litrev-eval-signal-"));
      const child = spawn(process.execPath, ["--import", "tsx", "eval/main.ts", "screening", "--dataset", "Nelson_2002", "--repetitions", "1", "--fake-oracle", "1,1", "--out", out], {
        cwd: ROOT,
        env: { ...process.env, NATS_URL: "", LOG_LEVEL: "warn" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const exited = once(child, "exit");
      try {
        await waitFor(() => output.includes(line) || child.exitCode !== null, 120_000, 20).catch((error: Error) => {
          throw new Error(`${error.message}; eval printed:\n${output.slice(-2000)}`);
        });
        // Anywhere in the next second and a half: the stack half-started, or the job part-screened.
        await new Promise((done) => setTimeout(done, Math.random() * 1_500));
        expect(child.exitCode, output).toBeNull();
        // The eval process alone: what it started must be stopped by eval itself.
        child.kill(signal);
        const [code, killedBy] = (await Promise.race([exited, new Promise((done) => setTimeout(() => done([null, "still running after 60 s"]), 60_000))])) as [number | null, string | null];
        expect(processesWithEnv(marker), "processes eval left").toEqual([]);
        expect({ code, killedBy }, output).toEqual({ code: 128 + (signal === "SIGINT" ? 2 : 15), killedBy: null });
        expect(output).toContain(`${signal}: stopping the local stack`);
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
        rmSync(out, { recursive: true, force: true });
      }
    });
  }

  it("a stack slower than its bound: stopped at the bound, nothing left running", async () => {
    withMarker();
    const started = Date.now();
    await expect(startFakeStack(records, rates, { startTimeoutMs: 300 })).rejects.toThrow(/within 300 ms/);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(processesWithEnv(marker)).toEqual([]);
  });
});

/** A free port below the ephemeral range (32768 and up on Linux), where no outgoing connection takes it. */
async function freeListenPort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!listening) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
  return freePort();
}
