import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, errors } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { freePort, startNatsServer, stopProcess, waitForPort } from "../../../scripts/lib/launch";
import { SharedRecords } from "./shared-records";
import { duringStartUp } from "./start-up";

const quiet = () => {
  const warnings: string[] = [];
  return { warnings, warn: (_details: object, message: string) => void warnings.push(message) };
};

describe("duringStartUp", () => {
  it("tries a step again while JetStream does not answer, and says so each time", async () => {
    const log = quiet();
    let calls = 0;
    const value = await duringStartUp(
      "limits bucket",
      async () => {
        if (++calls < 3) throw new errors.TimeoutError();
        return "opened";
      },
      log,
    );
    expect(value).toBe("opened");
    expect(calls).toBe(3);
    expect(log.warnings).toHaveLength(2);
    expect(log.warnings[0]).toMatch(/^limits bucket: JetStream did not answer at start-up/);
  });

  it("ends the start at once on any other failure, and at the end of its budget", async () => {
    const log = quiet();
    let calls = 0;
    const wrong = new Error("permission denied for the bucket");
    await expect(duringStartUp("x", () => (calls++, Promise.reject(wrong)), log)).rejects.toBe(wrong);
    expect(calls).toBe(1);
    const started = Date.now();
    await expect(duringStartUp("x", () => Promise.reject(new errors.TimeoutError()), log, 600)).rejects.toBeInstanceOf(errors.TimeoutError);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  // What failed a chaos run's restart on a NATS cluster (a worker started while JetStream was between
  // leaders exited with a TimeoutError): here JetStream is absent at first and arrives on the same port.
  it("opens a bucket once JetStream arrives, where a plain open fails", { timeout: 60_000 }, async () => {
    const port = await freePort();
    const storeDir = mkdtempSync(join(tmpdir(), "litrev-start-up-test-"));
    const plain = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    await waitForPort(port, 10_000, plain);
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      await expect(SharedRecords.open(nc)).rejects.toThrow();
      const log = quiet();
      const opening = duringStartUp("limits bucket", () => SharedRecords.open(nc), log);
      await new Promise((r) => setTimeout(r, 1_500));
      await stopProcess(plain);
      const withJetStream = await startNatsServer({ storeDir, port });
      try {
        await expect(opening).resolves.toBeInstanceOf(SharedRecords);
        expect(log.warnings.length).toBeGreaterThan(0);
      } finally {
        await nc.close();
        await withJetStream.stop();
      }
    } finally {
      await stopProcess(plain);
      rmSync(storeDir, { recursive: true, force: true });
    }
  });
});
