import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, waitFor, type HttpResult, type RunningProcess, type Stack } from "../support/stack";

/**
 * Scale-out and failure of a backend service (architecture invariants 3 and 7): replicas in one
 * queue group share requests; a replica leaving gracefully loses none; with no replica left the
 * routes answer a retryable 503 at once while the rest of the gateway is unaffected; a new
 * replica is picked up without touching the gateway.
 */

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    services: { criteria: 2 },
    // Debug level makes each replica log the operations it answers. A short RPC timeout bounds
    // any request caught in flight by a crash.
    env: { LOG_LEVEL: "debug", RPC_TIMEOUT_MS: "2000" },
  });
});
afterAll(async () => stack?.stop());

const analyze = () => stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Q?", mock: true });
const replicas = () => stack.processes.filter((p) => p.name === "criteria");
const handledBy = (replica: RunningProcess) => replica.output().split("\n").filter((l) => l.includes('"operation handled"')).length;

describe("criteria replicas", () => {
  it("share the requests between both replicas", async () => {
    const [a, b] = replicas();
    const before = [handledBy(a!), handledBy(b!)];
    const results = await Promise.all(Array.from({ length: 40 }, analyze));
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200));

    await waitFor(() => handledBy(a!) + handledBy(b!) - before[0]! - before[1]! === 40, 5_000);
    const counts = [handledBy(a!) - before[0]!, handledBy(b!) - before[1]!];
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[1]).toBeGreaterThan(0);
  });

  it("lose no request while one replica shuts down gracefully under load", async () => {
    const [leaving] = replicas();
    const statuses: number[] = [];
    let running = true;
    const load = (async () => {
      while (running) statuses.push((await analyze()).status);
    })();
    await waitFor(() => statuses.length >= 10);
    await stack.stopProcess(leaving!, "SIGTERM");
    const afterStop = statuses.length;
    await waitFor(() => statuses.length >= afterStop + 10);
    running = false;
    await load;
    expect(leaving!.child.exitCode).toBe(0);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it("answer a retryable 503 within 5 s once no replica is left, other routes unaffected", async () => {
    const last = replicas().find((p) => p.child.exitCode === null && p.child.signalCode === null)!;
    expect((await analyze()).status).toBe(200);

    // A crash, not a drain: the server learns of it only from the closed socket. A request that
    // races the crash can be routed to the dead replica and time out (504, retryable) after
    // RPC_TIMEOUT_MS; every later one gets an immediate 503.
    const killedAt = performance.now();
    await stack.stopProcess(last, "SIGKILL");
    const interim: number[] = [];
    const failed: HttpResult = await waitFor(async () => {
      const res = await analyze();
      if (res.status === 503) return res;
      interim.push(res.status);
      return undefined;
    }, 5_000, 50);
    const elapsed = performance.now() - killedAt;

    expect(interim.filter((s) => s !== 200 && s !== 504)).toEqual([]);
    expect(elapsed).toBeLessThan(5_000);
    expect(failed.status).toBe(503);
    expect(failed.body).toEqual({
      detail: { message: expect.stringContaining("criteria"), error_code: "unknown", error_reason: "service_unavailable", retryable: true },
    });
    // Every criteria route says the same, promptly.
    const started = performance.now();
    const picos = await stack.http("POST", "/criteria/picos", { project_description: "p", mock: true });
    expect(picos.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(1_000);

    expect((await stack.http("GET", "/health", undefined, { auth: false })).status).toBe(200);
    const prompts = await stack.http("GET", "/v1/config/prompts");
    expect(prompts.status).toBe(200);
    expect(prompts.body.map((p: { name: string }) => p.name)).toContain("criteria.question_analysis");
    const ready = await stack.http("GET", "/health/ready", undefined, { auth: false });
    expect(ready.body.checks.nats).toBe("ok");
    expect(ready.body.checks["service:criteria"]).toBeUndefined();
  });

  it("serve again as soon as a replica starts, without restarting the gateway", async () => {
    const fresh = await stack.startService("criteria");
    const res = await waitFor(async () => {
      const r = await analyze();
      return r.status === 200 ? r : undefined;
    }, 10_000);
    expect(res.body.status).toBe("could_improve");
    await waitFor(() => handledBy(fresh) > 0, 5_000);
  });
});
