import { describe, expect, it } from "vitest";
import { startTimeoutFromEnv, waitUntilListening } from "./start-wait";

describe("npm start's wait bound (STACK_START_TIMEOUT_S)", () => {
  it("is 10 minutes unless set, and a whole number of seconds when set", () => {
    expect(startTimeoutFromEnv({})).toBe(600_000);
    expect(startTimeoutFromEnv({ STACK_START_TIMEOUT_S: "" })).toBe(600_000);
    expect(startTimeoutFromEnv({ STACK_START_TIMEOUT_S: "1800" })).toBe(1_800_000);
    for (const bad of ["0", "-5", "1.5", "ten", "86401"]) expect(startTimeoutFromEnv({ STACK_START_TIMEOUT_S: bad })).toMatch(/^STACK_START_TIMEOUT_S must be a whole number of seconds/);
  });
});

describe("waiting for a process to listen", () => {
  it("says how long it has waited, with the process's state, until the port answers", async () => {
    const lines: string[] = [];
    let probes = 0;
    const ok = await waitUntilListening({ what: "the gateway", port: 8000, host: "127.0.0.1", timeoutMs: 60_000, progressEveryMs: 150, state: () => "running, 0 restarts", log: (line) => lines.push(line), probe: async () => ++probes > 5 });
    expect(ok).toBe(true);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines[0]).toMatch(/^\[stack\] waiting for the gateway to listen on 127\.0\.0\.1:8000: \d+ s so far \(running, 0 restarts\); gives up after 60 s \(STACK_START_TIMEOUT_S\)$/);
  });

  it("gives up at the bound with a line naming the variable, and quietly once abandoned", async () => {
    await expect(waitUntilListening({ what: "nats-server", port: 4222, host: "127.0.0.1", timeoutMs: 300, log: () => undefined, probe: async () => false })).rejects.toThrow("nats-server did not listen on 127.0.0.1:4222 within 0.3 s (STACK_START_TIMEOUT_S sets the bound)");
    let stopping = false;
    setTimeout(() => (stopping = true), 200);
    expect(await waitUntilListening({ what: "the gateway", port: 8000, host: "127.0.0.1", timeoutMs: 60_000, abandoned: () => stopping, probe: async () => false })).toBe(false);
  });
});
