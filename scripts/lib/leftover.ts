import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * nats-server runs in its own process group (a terminal's Ctrl-C must not stop it before the
 * services), so should `npm start` itself be killed outright (SIGKILL, a closed terminal, an
 * out-of-memory kill) nothing stops it, and the next `npm start` finds NATS_PORT taken. The stack
 * writes its pid to a file in its data directory; the next start stops the server that pid names,
 * if it is still our nats-server on that data directory (its command line names our config file).
 */

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The command line of `pid` (ps: Linux and macOS alike), or undefined if there is no such process. */
function commandOf(pid: number): string | undefined {
  try {
    return execFileSync("ps", ["-o", "command=", "-p", String(pid)], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export function recordPid(file: string, pid: number | undefined): void {
  if (pid !== undefined) writeFileSync(file, `${pid}\n`, { mode: 0o600 });
}

/**
 * Stops the process `file` names if its command line contains `mark` (SIGTERM, then SIGKILL after
 * `graceMs`); returns its pid, or undefined when there was nothing of ours to stop. The file goes either way.
 */
export async function stopLeftover(file: string, mark: string, graceMs = 5_000): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number(readFileSync(file, "utf8").trim());
  } catch {
    return undefined;
  }
  rmSync(file, { force: true });
  if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || !commandOf(pid)?.includes(mark)) return undefined;
  process.kill(pid, "SIGTERM");
  for (const deadline = Date.now() + graceMs; alive(pid) && Date.now() < deadline; ) await sleep(50);
  if (alive(pid)) process.kill(pid, "SIGKILL");
  return pid;
}

/**
 * Processes of this user whose environment holds `entry` (`NAME=value`): every process a run
 * started, whatever its process group, for the tests and the bench that check nothing is left.
 * Linux only (/proc); elsewhere an empty list.
 */
export function processesWithEnv(entry: string): number[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/environ`).includes(`${entry}\0`)) found.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
