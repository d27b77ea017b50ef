import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, ROOT, startNatsServer, type NatsServerHandle } from "../../scripts/lib/launch";
import { http, waitFor } from "../support/stack";

/**
 * `npm start` (scripts/stack.ts) as a user runs it: a service SIGKILLed behind its back comes back
 * by itself (the supervisor's backoff and logging are unit-tested in scripts/lib/supervise.test.ts),
 * and SIGINT still stops every process. The suite brings its own nats-server (NATS_URL), so it does
 * not touch .data/nats.
 */

const API_KEY = "chaos-supervisor-key-0123456789";

const pidOf = (output: string, service: string): number[] =>
  [...output.matchAll(new RegExp(`\\[stack\\] ${service} started \\(pid (\\d+)\\)`, "g"))].map((m) => Number(m[1]));
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("npm start supervises its services", () => {
  let storeDir: string;
  let nats: NatsServerHandle;
  let stack: ChildProcess;
  let output = "";
  let port: number;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-supervisor-"));
    nats = await startNatsServer({ storeDir });
    port = await freePort();
    stack = spawn(process.execPath, ["--import", "tsx", join(ROOT, "scripts/stack.ts")], {
      cwd: ROOT,
      env: {
        ...process.env,
        NATS_URL: nats.url,
        PORT: String(port),
        HOST: "127.0.0.1",
        API_KEY,
        JOB_KEY_SECRET: randomBytes(32).toString("base64url"),
        MONGO_URL: "",
        LOG_LEVEL: "warn",
        SHUTDOWN_TIMEOUT_MS: "5000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    stack.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    stack.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitFor(() => output.includes("[stack] press Ctrl-C to stop") || stack.exitCode !== null, 90_000, 100);
    if (stack.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
  });
  afterAll(async () => {
    if (stack && stack.exitCode === null) {
      stack.kill("SIGINT");
      await once(stack, "exit");
    }
    await nats?.stop();
    if (storeDir) rmSync(storeDir, { recursive: true, force: true });
  });

  const mockJob = () =>
    http(`http://127.0.0.1:${port}`, "POST", "/v1/screening/jobs", { papers: [{ id: "a", title: "t", abstract: "x" }], mock: true }, { headers: { "x-api-key": API_KEY } });

  it("a SIGKILLed service is restarted and serves again; Ctrl-C stops every process", async () => {
    const [screening] = pidOf(output, "screening");
    expect(screening).toBeDefined();
    expect((await waitFor(async () => ((await mockJob()).status === 200 ? true : null), 30_000, 250))).toBe(true);

    const killedAt = Date.now();
    process.kill(screening!, "SIGKILL");
    await waitFor(() => /\[stack\] screening exited \(signal SIGKILL\) after [\d.]+ s; restart #1 in 500 ms/.test(output), 10_000, 50);
    const [, restarted] = await waitFor(() => (pidOf(output, "screening").length >= 2 ? pidOf(output, "screening") : null), 10_000, 50);
    expect(restarted).not.toBe(screening);
    // The new process answers admissions (only a screening process serves create-job).
    await waitFor(async () => isAlive(restarted!) && (await mockJob()).status === 200, 45_000, 250);
    console.log(`[chaos-supervisor] screening back ${Date.now() - killedAt} ms after SIGKILL (pid ${screening} → ${restarted})`);

    // The gateway, too: the same port answers again.
    const [gateway] = pidOf(output, "gateway");
    process.kill(gateway!, "SIGKILL");
    await waitFor(() => pidOf(output, "gateway").length >= 2, 10_000, 50);
    await waitFor(async () => (await http(`http://127.0.0.1:${port}`, "GET", "/health", undefined, { auth: false })).status === 200, 45_000, 250);

    const pids = ["gateway", "criteria", "screening", "indexer"].map((s) => pidOf(output, s).at(-1)!);
    expect(pids.every(isAlive)).toBe(true);
    const exited = once(stack, "exit");
    const before = output.length;
    stack.kill("SIGINT");
    const [code] = await exited;
    expect(code).toBe(0);
    expect(pids.filter(isAlive)).toEqual([]);
    // Services stopping on Ctrl-C are not mistaken for crashes.
    expect(output.slice(before)).not.toMatch(/restart #|started \(pid/);
  });
});
