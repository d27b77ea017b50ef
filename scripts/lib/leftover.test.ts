import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { recordPid, stopLeftover } from "./leftover";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a process an earlier npm start left behind", () => {
  it("is stopped when its command line still names our mark, and the pid file goes", async () => {
    dir = mkdtempSync(join(tmpdir(), "litrev-leftover-"));
    const mark = join(dir, "nats-server.conf");
    // Stands in for a detached nats-server: a process whose arguments name the config file.
    const orphan = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", mark], { stdio: "ignore", detached: true });
    const file = join(dir, "nats-server.pid");
    recordPid(file, orphan.pid);
    const exited = once(orphan, "exit");
    expect(await stopLeftover(file, mark)).toBe(orphan.pid);
    await exited;
    expect(existsSync(file)).toBe(false);
  });

  it("leaves alone a pid that now belongs to something else, or names nothing", async () => {
    dir = mkdtempSync(join(tmpdir(), "litrev-leftover-"));
    const other = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    try {
      const file = join(dir, "nats-server.pid");
      recordPid(file, other.pid);
      expect(await stopLeftover(file, join(dir, "nats-server.conf"))).toBeUndefined();
      expect(other.exitCode).toBeNull();
      writeFileSync(file, "not a pid");
      expect(await stopLeftover(file, "x")).toBeUndefined();
      expect(await stopLeftover(join(dir, "absent.pid"), "x")).toBeUndefined();
    } finally {
      other.kill("SIGKILL");
    }
  });
});
