import { setTimeout as sleep } from "node:timers/promises";
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { JOB_SERVICES, type ServiceName } from "@litrev/contracts";

/** Starting the stack's processes, shared by `npm start` and the end-to-end suites. */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Every process of the stack: the gateway, criteria and each job kind's service (`JOB_SERVICES`). */
export const SERVICES: readonly ServiceName[] = ["gateway", "criteria", ...JOB_SERVICES];
export type ServiceProcess = ServiceName;

/**
 * V8's old-space ceiling (MB) for the job workers. Their live heap is flat in a job's size (about
 * 85 MB while a screening job runs, see docs/performance.md); without a ceiling V8 lets garbage it
 * has not collected yet grow the heap with the job's duration (689 MB at 50,000 papers). Given as
 * NODE_OPTIONS, first: a NODE_OPTIONS of the caller's own that sets it wins (docs/operations.md).
 */
export const JOB_WORKER_HEAP_MB = 320;

/**
 * The gateway's V8 old-space ceiling (MB), for each of its isolates (the event loop's and the body
 * thread's). Uncapped, V8 let a gateway under a two-owner attack keep garbage until its RSS reached
 * 495–516 MB (the attack suite's bound is 512 MiB); its live heap stayed under 175 MB. The largest
 * creation the default body limit admits must fit too: 100 MiB of abstracts that each hold one
 * character past U+00FF (V8 then keeps the whole string in two bytes a character, as with most real
 * abstracts) ran the gateway out of heap at 320 (`npm run bench -- largest-body`, docs/performance.md).
 */
export const GATEWAY_HEAP_MB = 512;

const HEAP_MB: Partial<Record<ServiceProcess, number>> = { gateway: GATEWAY_HEAP_MB, ...Object.fromEntries(JOB_SERVICES.map((service) => [service, JOB_WORKER_HEAP_MB])) };

/** Node arguments that run a service's TypeScript entry with telemetry loaded first. */
export function serviceArgs(service: ServiceProcess): string[] {
  return [
    "--enable-source-maps",
    "--import",
    "tsx",
    "--import",
    join(ROOT, "libs/telemetry/src/register.ts"),
    join(ROOT, `services/${service}/src/main.ts`),
  ];
}

export function spawnService(service: ServiceProcess, env: NodeJS.ProcessEnv, options: SpawnOptions = {}): ChildProcess {
  const merged: NodeJS.ProcessEnv = { ...process.env, OTEL_SERVICE_NAME: `litrev-${service}`, ...env };
  const heapMb = HEAP_MB[service];
  if (heapMb !== undefined) merged.NODE_OPTIONS = [`--max-old-space-size=${heapMb}`, merged.NODE_OPTIONS].filter(Boolean).join(" ");
  return spawn(process.execPath, serviceArgs(service), {
    cwd: ROOT,
    env: merged,
    stdio: "inherit",
    ...options,
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

export interface NatsServerHandle {
  url: string;
  port: number;
  process: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface NatsServerOptions {
  port?: number;
  storeDir: string;
  stdio?: SpawnOptions["stdio"];
  /**
   * Extra nats-server configuration (e.g. the `authorization` block of scripts/lib/nats-auth.ts).
   * When given, the server runs from a config file written into `storeDir` (mode 0600: it may hold passwords).
   */
  config?: string;
  /** Run in its own process group, out of reach of the terminal's Ctrl-C (`npm start` stops it last itself). */
  detached?: boolean;
  /** How long startNatsServer waits for it to listen (default 10 s). */
  startTimeoutMs?: number;
}

/** How to run Debian's nats-server with JetStream and file storage in `storeDir`, always on the same port and store. */
export interface NatsServerCommand {
  url: string;
  port: number;
  /** Starts one run of the server (a restart reuses the port, the store and so every stream and bucket). */
  spawn(): ChildProcess;
}

export async function natsServerCommand(options: NatsServerOptions): Promise<NatsServerCommand> {
  const port = options.port ?? (await freePort());
  mkdirSync(options.storeDir, { recursive: true });
  let args = ["-js", "-sd", options.storeDir, "-a", "127.0.0.1", "-p", String(port)];
  if (options.config !== undefined) {
    const file = join(options.storeDir, "nats-server.conf");
    const base = [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: ${JSON.stringify(options.storeDir)} }`];
    writeFileSync(file, `${[...base, options.config].join("\n")}\n`, { mode: 0o600 });
    args = ["-c", file];
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    spawn: () => {
      // Detached (its own process group): a terminal's Ctrl-C, sent to the whole foreground group,
      // then does not reach it, and its parent stops it after the services instead of with them.
      const child = spawn("nats-server", args, { stdio: options.stdio ?? "ignore", detached: options.detached ?? false });
      child.once("error", () => undefined);
      return child;
    },
  };
}

/** Starts Debian's nats-server with JetStream and file storage in `storeDir`; resolves once it accepts connections. */
export async function startNatsServer(options: NatsServerOptions): Promise<NatsServerHandle> {
  const command = await natsServerCommand(options);
  const child = command.spawn();
  try {
    await waitForPort(command.port, options.startTimeoutMs ?? 60_000, child);
  } catch (error) {
    // Generous by default: on a busy machine a server replaying its store takes a while to listen.
    // One that did not come up in time is not left running.
    await stopProcess(child, "SIGKILL");
    throw error;
  }
  return {
    url: command.url,
    port: command.port,
    process: child,
    stop: (signal = "SIGTERM") => stopProcess(child, signal),
  };
}

export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

export async function waitForPort(port: number, timeoutMs: number, child?: ChildProcess, host = "127.0.0.1", signal?: AbortSignal): Promise<void> {
  const { connect } = await import("node:net");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`process exited (${child.signalCode ? `signal ${child.signalCode}` : `code ${child.exitCode}`}) before listening on ${port}`);
    const ok = await new Promise<boolean>((done) => {
      const socket = connect(port, host);
      socket.once("connect", () => (socket.destroy(), done(true)));
      socket.once("error", () => done(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listened on port ${port} within ${timeoutMs} ms`);
}
