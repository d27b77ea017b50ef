import { freePort, spawnService, waitForPort } from "../../scripts/lib/launch";
import type { LiveJobState } from "@litrev/contracts";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { TEST_API_KEY, waitFor, type RunningProcess, type Stack } from "../support/stack";

/** Shared helpers of the resilience suites (test/resilience). */

export type Svc = "gateway" | "criteria" | "screening" | "indexer";

/** Processes of one kind that are still running. */
export function alive(stack: Stack, name: Svc): RunningProcess[] {
  return stack.processes.filter((p) => p.name === name && p.child.exitCode === null && p.child.signalCode === null);
}

/** The running process whose log names `instance` (a job's `worker`). */
export function processOf(stack: Stack, name: Svc, instance: string): RunningProcess | undefined {
  return alive(stack, name).find((p) => p.output().includes(instance));
}

/**
 * Starts one more gateway on a fresh port with the stack's environment (the harness starts
 * gateways only at the beginning). Pass the stack's `JOB_KEY_SECRET` in `env` when keys are sealed. It joins `stack.processes`, so `stack.stop()` stops it.
 */
export async function startGateway(stack: Stack, env: NodeJS.ProcessEnv = {}): Promise<{ process: RunningProcess; url: string }> {
  const port = await freePort();
  const base = { API_KEY: TEST_API_KEY, LOG_LEVEL: "info", MONGO_URL: "", SHUTDOWN_TIMEOUT_MS: "5000" };
  const child = spawnService("gateway", { ...base, ...env, NATS_URL: stack.natsUrl, PORT: String(port), HOST: "127.0.0.1" }, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const running: RunningProcess = { name: "gateway", child, output: () => output };
  stack.processes.push(running);
  await waitForPort(port, 30_000, child);
  return { process: running, url: `http://127.0.0.1:${port}` };
}

/**
 * A test-side NATS connection with a job service's infrastructure (to read live state without
 * polling). `ackWaitMs` must be the stack's JOB_ACK_WAIT_MS: opening the infrastructure sets the
 * shared worker consumer's ack wait (the last process to open it wins).
 */
export async function jobInfraFor(stack: Stack, service: "screening" | "indexer", name: string, ackWaitMs?: number): Promise<{ link: NatsLink; infra: JobInfra }> {
  const link = new NatsLink({ servers: stack.natsUrl, name });
  const infra = await openJobInfra(await link.ready(), service, ackWaitMs ? { ackWaitMs } : {});
  return { link, infra };
}

export const isTerminal = (state: LiveJobState | undefined) => state?.status === "completed" || state?.status === "failed";

/** Waits, without polling through a gateway (a screening poll consumes a finished job), until the live state is terminal. */
export function terminalState(infra: JobInfra, jobId: string, timeoutMs = 90_000): Promise<LiveJobState> {
  return waitFor(async () => {
    const state = (await infra.registry.get(jobId))?.state;
    return isTerminal(state) ? state : null;
  }, timeoutMs, 100);
}

/** Lines of a process's log whose message matches. */
export function logLines(process: RunningProcess, pattern: RegExp): string[] {
  return process
    .output()
    .split("\n")
    .filter((line) => pattern.test(line));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
