import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  freePort,
  spawnService,
  startNatsServer,
  stopProcess,
  waitForPort,
  type NatsServerHandle,
  type ServiceProcess,
} from "../../scripts/lib/launch";
import { generateNatsCredentials, lockedNatsConfig, natsCredentialsEnv, type NatsCredentials } from "../../scripts/lib/nats-auth";
import { startTimeoutFromEnv } from "../../scripts/lib/start-wait";

/**
 * Real processes for end-to-end suites: a nats-server (local binary, or NATS_URL when set),
 * a gateway and backend services, each its own Node process, exactly as `npm start` runs them.
 */

export const TEST_API_KEY = "test-service-key-0123456789";
/** How long a process may take to serve: a busy machine (2 cores, several suites at once) needs more than 30 s. */
const START_WAIT_MS = 60_000;

export interface RunningProcess {
  name: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
}

export interface StackOptions {
  /** Backend services to start, with replica counts (default: criteria ×1). */
  services?: Partial<Record<Exclude<ServiceProcess, "gateway">, number>>;
  /** Gateway replicas (default 1). */
  gateways?: number;
  /** Extra environment for the gateways, made once NATS is up (e.g. a NATS_URL through a proxy). */
  gatewayEnv?: (natsUrl: string) => NodeJS.ProcessEnv | Promise<NodeJS.ProcessEnv>;
  /** Extra environment for every process. */
  env?: NodeJS.ProcessEnv;
  /**
   * Run nats-server locked down as `npm start` does: one user per process kind with a generated
   * password and the permissions of libs/messaging/src/permissions.ts; anonymous connections refused.
   */
  lockedNats?: boolean;
  /** How long each process may take to listen or say it is ready (default START_WAIT_MS, or STACK_START_TIMEOUT_S). */
  startTimeoutMs?: number;
  /** Gives up the start when aborted (a Ctrl-C): what was started is stopped and the start rejects. */
  signal?: AbortSignal;
}

export interface Stack {
  nats: NatsServerHandle | undefined;
  natsUrl: string;
  /** Base URLs of the gateway replicas, e.g. http://127.0.0.1:12345 */
  gatewayUrls: string[];
  baseUrl: string;
  processes: RunningProcess[];
  /** HTTP call to the first gateway (or `url`) with the service key unless `auth: false`. */
  http(method: string, path: string, body?: unknown, options?: HttpOptions): Promise<HttpResult>;
  startService(service: Exclude<ServiceProcess, "gateway">, env?: NodeJS.ProcessEnv): Promise<RunningProcess>;
  stopProcess(process: RunningProcess, signal?: NodeJS.Signals): Promise<void>;
  /** Each process kind's NATS password when the stack runs with `lockedNats` (for tests that connect as a user). */
  natsCredentials: NatsCredentials | undefined;
  /** nats-server's log with `lockedNats` (permission violations are logged there). */
  natsLogFile: string | undefined;
  /** nats-server's monitoring endpoint (loopback) with `lockedNats`. */
  natsMonitorUrl: string | undefined;
  /** Restarts nats-server on the same port and store (only for a stack-owned server). */
  restartNats(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface HttpOptions {
  auth?: boolean;
  headers?: Record<string, string>;
  baseUrl?: string;
  rawBody?: string;
}

export interface HttpResult {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary JSON
  headers: Headers;
}

export async function http(baseUrl: string, method: string, path: string, body?: unknown, options: HttpOptions = {}): Promise<HttpResult> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.auth !== false) headers["x-api-key"] ??= TEST_API_KEY;
  const payload = options.rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
  if (payload !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(`${options.baseUrl ?? baseUrl}${path}`, { method, headers, body: payload });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

function track(name: string, child: ChildProcess): RunningProcess {
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { name, child, output: () => output };
}

/** Waits until `check` returns a truthy value, polling every `intervalMs`. */
export async function waitFor<T>(check: () => Promise<T> | T, timeoutMs = 15_000, intervalMs = 100): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ""}`);
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const storeDir = mkdtempSync(join(tmpdir(), "litrev-nats-"));
  if (options.lockedNats && process.env.NATS_URL) throw new Error("lockedNats needs a stack-owned nats-server (unset NATS_URL)");
  const natsCredentials = options.lockedNats ? generateNatsCredentials() : undefined;
  // A locked server logs to a file, so a suite can show that no permission was violated.
  const natsLogFile = natsCredentials ? join(storeDir, "nats-server.log") : undefined;
  // …and serves its monitoring endpoint on loopback, so a suite can list every stream's limits (/jsz).
  const natsMonitorUrl = natsCredentials ? `http://127.0.0.1:${await freePort()}` : undefined;
  const natsConfig = natsCredentials
    ? { config: [`log_file: ${JSON.stringify(natsLogFile)}`, `http: "${natsMonitorUrl!.slice("http://".length)}"`, lockedNatsConfig(natsCredentials)].join("\n") }
    : {};
  // STACK_START_TIMEOUT_S, when set, raises every suite's bound at once (a busy machine).
  const fromEnv = process.env.STACK_START_TIMEOUT_S ? startTimeoutFromEnv(process.env) : undefined;
  const startTimeoutMs = options.startTimeoutMs ?? (typeof fromEnv === "number" ? fromEnv : START_WAIT_MS);
  const nats = process.env.NATS_URL ? undefined : await startNatsServer({ storeDir, ...natsConfig, startTimeoutMs: Math.max(10_000, startTimeoutMs) });
  // An empty NATS_URL is unset (as everywhere): the stack's own server, never "" (which a service reads as its default, 127.0.0.1:4222).
  const natsUrl = process.env.NATS_URL || nats!.url;
  const processes: RunningProcess[] = [];
  const baseEnv: NodeJS.ProcessEnv = {
    NATS_URL: natsUrl,
    API_KEY: TEST_API_KEY,
    // Shared by the gateway and job workers to seal provider keys of queued jobs; fresh per stack.
    JOB_KEY_SECRET: randomBytes(32).toString("base64url"),
    LLM_BUDGET_SECRET: randomBytes(32).toString("base64url"),
    LOG_LEVEL: "info",
    MONGO_URL: "",
    SHUTDOWN_TIMEOUT_MS: "5000",
    ...options.env,
  };

  const launch = (service: ServiceProcess, env: NodeJS.ProcessEnv) => {
    const credentials = natsCredentials ? natsCredentialsEnv(natsCredentials, service) : {};
    const running = track(service, spawnService(service, { ...baseEnv, ...credentials, ...env }, { stdio: ["ignore", "pipe", "pipe"] }));
    processes.push(running);
    return running;
  };

  const startService = async (service: Exclude<ServiceProcess, "gateway">, env: NodeJS.ProcessEnv = {}) => {
    const running = launch(service, env);
    await waitFor(() => running.output().includes('"service ready"') || running.child.exitCode !== null || options.signal?.aborted, startTimeoutMs);
    options.signal?.throwIfAborted();
    if (running.child.exitCode !== null) throw new Error(`${service} exited early:\n${running.output()}`);
    return running;
  };

  const stop = async () => {
    await Promise.all(processes.map((p) => stopProcess(p.child, "SIGTERM", 5_000)));
    await nats?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  };

  const gatewayUrls: string[] = [];
  const gatewayEnv = (await options.gatewayEnv?.(natsUrl)) ?? {};
  try {
    options.signal?.throwIfAborted();
    for (let i = 0; i < (options.gateways ?? 1); i++) {
      const port = await freePort();
      const gateway = launch("gateway", { ...gatewayEnv, PORT: String(port), HOST: "127.0.0.1" });
      await waitForPort(port, startTimeoutMs, gateway.child, "127.0.0.1", options.signal);
      gatewayUrls.push(`http://127.0.0.1:${port}`);
    }
    for (const [service, count] of Object.entries(options.services ?? { criteria: 1 })) {
      for (let i = 0; i < (count ?? 0); i++) await startService(service as Exclude<ServiceProcess, "gateway">);
    }
  } catch (error) {
    // A stack that does not come up is stopped whole: no gateway or nats-server outlives the attempt.
    await stop();
    throw error;
  }

  const baseUrl = gatewayUrls[0]!;
  return {
    nats,
    natsUrl,
    gatewayUrls,
    baseUrl,
    processes,
    natsCredentials,
    natsLogFile,
    natsMonitorUrl,
    http: (method, path, body, httpOptions) => http(baseUrl, method, path, body, httpOptions),
    startService,
    stopProcess: (running, signal = "SIGTERM") => stopProcess(running.child, signal),
    async restartNats(downMs = 500) {
      if (!nats) throw new Error("restartNats needs a stack-owned nats-server (NATS_URL is set)");
      await nats.stop();
      await new Promise((r) => setTimeout(r, downMs));
      const restarted = await startNatsServer({ storeDir, port: nats.port, ...natsConfig });
      Object.assign(nats, restarted);
    },
    stop,
  };
}
