import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { backoffDelay, describeExit, supervise, type Supervised } from "./supervise";

/** A tiny child: counts its runs in `file`, then behaves as `script` (run number in `run`). */
function child(dir: string, script: string) {
  const counter = join(dir, "runs");
  writeFileSync(counter, "0");
  const code = `const fs=require("fs");const run=Number(fs.readFileSync(${JSON.stringify(counter)},"utf8"))+1;fs.writeFileSync(${JSON.stringify(counter)},String(run));${script}`;
  return {
    start: () => spawn(process.execPath, ["-e", code], { stdio: "ignore" }),
    runs: () => Number(readFileSync(counter, "utf8")),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(10);
  }
}

describe("backoffDelay", () => {
  it("doubles from the initial delay and stays at the cap", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((a) => backoffDelay(a))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    expect(backoffDelay(1_000, { initialDelayMs: 10, maxDelayMs: 50, factor: 3 })).toBe(50);
  });
  it("names a code or a signal", () => {
    expect(describeExit(3, null)).toBe("code 3");
    expect(describeExit(null, "SIGKILL")).toBe("signal SIGKILL");
  });
});

describe("supervise", () => {
  let dir: string;
  let supervised: Supervised | undefined;
  afterEach(async () => {
    await supervised?.stop("SIGKILL");
    supervised = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("restarts a crashing child with growing, capped delays and logs each exit code", async () => {
    dir = mkdtempSync(join(tmpdir(), "supervise-"));
    const c = child(dir, "process.exit(3);");
    const lines: string[] = [];
    supervised = supervise({ name: "svc", start: c.start, initialDelayMs: 20, maxDelayMs: 80, log: (l) => lines.push(l) });
    await until(() => lines.length >= 5);
    const delays = lines.map((l) => Number(/in (\d+) ms/.exec(l)?.[1]));
    expect(delays.slice(0, 5)).toEqual([20, 40, 80, 80, 80]);
    expect(lines[0]).toMatch(/^\[stack\] svc exited \(code 3\) after \d+\.\d s; restart #1 in 20 ms$/);
    expect(c.runs()).toBeGreaterThanOrEqual(5);
    expect(supervised.restarts).toBe(lines.length);
  });

  it("logs a signal, and a run that lasted stableMs resets the backoff", async () => {
    dir = mkdtempSync(join(tmpdir(), "supervise-"));
    // Runs 1–3 die at once by SIGKILL (well under stableMs even on a loaded machine); run 4 lives 2.5 s (stable), then dies again.
    const c = child(dir, "if(run===4){setTimeout(()=>process.kill(process.pid,'SIGKILL'),2500)}else{process.kill(process.pid,'SIGKILL')}");
    const lines: string[] = [];
    supervised = supervise({ name: "svc", start: c.start, initialDelayMs: 20, maxDelayMs: 1_000, stableMs: 2_000, log: (l) => lines.push(l) });
    await until(() => lines.length >= 5);
    expect(lines.every((l) => l.includes("exited (signal SIGKILL)"))).toBe(true);
    expect(lines.slice(0, 5).map((l) => Number(/in (\d+) ms/.exec(l)?.[1]))).toEqual([20, 40, 80, 20, 40]);
  });

  it("stop() cancels a pending restart", async () => {
    dir = mkdtempSync(join(tmpdir(), "supervise-"));
    const c = child(dir, "process.exit(1);");
    const lines: string[] = [];
    supervised = supervise({ name: "svc", start: c.start, initialDelayMs: 300, log: (l) => lines.push(l) });
    await until(() => lines.length === 1);
    expect(supervised.child).toBeUndefined();
    await supervised.stop();
    await sleep(600);
    expect(c.runs()).toBe(1);
    expect(lines).toHaveLength(1);
  });

  it("stop() ends a running child without restarting it", async () => {
    dir = mkdtempSync(join(tmpdir(), "supervise-"));
    const c = child(dir, "setInterval(()=>{},1000);");
    const lines: string[] = [];
    supervised = supervise({ name: "svc", start: c.start, initialDelayMs: 10, log: (l) => lines.push(l) });
    const running = supervised.child!;
    await until(() => c.runs() === 1);
    await supervised.stop("SIGTERM");
    expect(running.signalCode).toBe("SIGTERM");
    await sleep(200);
    expect(c.runs()).toBe(1);
    expect(lines).toEqual([]);
    expect(supervised.child).toBeUndefined();
  });

  it("a child that exits with EXIT_CONFIG (78) is not restarted, and onConfigExit is told", async () => {
    dir = mkdtempSync(join(tmpdir(), "supervise-"));
    const c = child(dir, "process.exit(78);");
    const lines: string[] = [];
    let told = 0;
    supervised = supervise({ name: "svc", start: c.start, initialDelayMs: 10, log: (l) => lines.push(l), onConfigExit: () => told++ });
    await until(() => told === 1);
    await sleep(300);
    expect(c.runs()).toBe(1);
    expect(supervised.restarts).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[stack\] svc exited \(code 78: its configuration\) after \d+\.\d s; not restarted$/);
    expect(told).toBe(1);
  });

  it("a child that cannot be spawned is retried like a crash", async () => {
    const lines: string[] = [];
    let starts = 0;
    supervised = supervise({
      name: "ghost",
      start: () => (starts++, spawn(join(tmpdir(), "no-such-binary-for-supervise-test"), [], { stdio: "ignore" })),
      initialDelayMs: 10,
      log: (l) => lines.push(l),
    });
    await until(() => lines.length >= 2);
    expect(lines[0]).toMatch(/ghost failed to start \(.*ENOENT.*\).*restart #1 in 10 ms/);
    expect(starts).toBeGreaterThanOrEqual(2);
  });
});
