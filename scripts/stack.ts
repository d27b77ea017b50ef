/**
 * `npm start`: the whole stack on one machine. Checks first that PORT (and NATS_PORT) can be listened
 * on: a taken port ends it at once, with one line and exit code 78, before anything is printed or
 * started. Then starts nats-server (JetStream, data in .data/nats, one user per process kind with
 * generated passwords) unless NATS_URL is set, then the gateway (on 127.0.0.1 unless HOST says
 * otherwise) and every service as separate processes. It waits for them to listen as long as
 * STACK_START_TIMEOUT_S allows (10 minutes by default: a busy machine can take minutes), with a
 * progress line every 15 s. Every process, nats-server included, is kept
 * running by a supervisor: one that crashes is restarted with backoff (jobs resume from their
 * checkpoints; nats-server keeps its store and the services reconnect), while one that exits on its
 * configuration (exit code 78) stops the stack instead. Ctrl-C (SIGINT, SIGTERM or SIGHUP) stops
 * them in order: pending restarts cancelled, services first, NATS last. Run it with `node --import
 * tsx` (package.json), not the tsx command: tsx's wrapper SIGKILLs a child that has not acknowledged
 * a Ctrl-C within 30 ms (a busy machine), which would leave nats-server, in its own process group, behind.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join, relative, resolve } from "node:path";
// Only light modules before the port check, so a taken port is reported at once; the rest is
// imported after it.
import { EXIT_CONFIG } from "../libs/telemetry/src/exit-codes";
import { ROOT, type ServiceProcess } from "./lib/launch";
import { recordPid, stopLeftover } from "./lib/leftover";
import { portFromEnv, portProblem } from "./lib/ports";
import { startTimeoutFromEnv } from "./lib/start-wait";
import type { Supervised } from "./lib/supervise";

/** One line, no stack trace, and the exit code the supervisors treat as "do not retry". */
function refuse(line: string): never {
  process.stderr.write(`[stack] ${line}\n`);
  process.exit(EXIT_CONFIG);
}

// Local use by default: the gateway listens on loopback only unless HOST says otherwise.
const host = process.env.HOST || "127.0.0.1";
const ownNats = !process.env.NATS_URL;
function portOf(name: string, fallback: number): number {
  const port = portFromEnv(name, process.env[name], fallback);
  return typeof port === "string" ? refuse(port) : port;
}
const port = portOf("PORT", 8000);
// How long to wait for nats-server and the gateway to listen (STACK_START_TIMEOUT_S, 10 minutes by default).
const startTimeout = startTimeoutFromEnv(process.env);
if (typeof startTimeout === "string") refuse(startTimeout);
const natsPort = ownNats ? portOf("NATS_PORT", 4222) : undefined;
// STACK_DATA_DIR: another place for the stack's data (tests use a temporary one); `.data` by default.
const dataDir = resolve(ROOT, process.env.STACK_DATA_DIR || ".data");
const shown = relative(ROOT, dataDir).startsWith("..") ? dataDir : relative(ROOT, dataDir);
// The nats-server of a run that was killed outright (its own process group outlives it) would hold NATS_PORT.
const natsPidFile = join(dataDir, "nats-server.pid");
const natsConfigFile = join(dataDir, "nats", "nats-server.conf");
if (natsPort !== undefined) {
  const leftover = await stopLeftover(natsPidFile, natsConfigFile);
  if (leftover !== undefined) console.log(`[stack] stopped the nats-server (pid ${leftover}) an earlier run left behind`);
}
const portTaken = await portProblem(port, host);
if (portTaken) refuse(`cannot start: ${portTaken} (PORT); stop what uses it or set another PORT`);
if (natsPort !== undefined) {
  // Our nats-server listens on loopback only (scripts/lib/launch.ts).
  const natsTaken = await portProblem(natsPort, "127.0.0.1");
  if (natsTaken) refuse(`cannot start: ${natsTaken} (NATS_PORT); stop what uses it, set another NATS_PORT, or point NATS_URL at a running server`);
}

const { natsServerCommand, SERVICES, spawnService } = await import("./lib/launch");
const { waitUntilListening } = await import("./lib/start-wait");
const { loadOrCreateNatsCredentials, lockedNatsConfig, natsCredentialsEnv } = await import("./lib/nats-auth");
const { supervise } = await import("./lib/supervise");

mkdirSync(dataDir, { recursive: true });

// Restart backoff: 0.5 s doubling to 30 s; a run that lasted a minute counts as stable and resets it.
const backoff = { initialDelayMs: 500, maxDelayMs: 30_000, stableMs: 60_000 };
let stopping = false;
const children: Supervised[] = [];
let nats: Supervised | undefined;
// Registered before anything starts, so Ctrl-C during start-up also stops everything.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void stop(0));
// Last resort should this script die of an error: no process outlives it (nats-server, in its own
// process group, would otherwise keep NATS_PORT taken).
process.on("exit", () => {
  for (const supervised of [...children, nats]) supervised?.child?.kill("SIGTERM");
});
/** A process that exited on its configuration is not restarted; the stack cannot work without it. */
const onConfigExit = () => {
  console.error(`[stack] stopping: a process cannot run with this configuration (see its message above)`);
  void stop(EXIT_CONFIG);
};

const env: NodeJS.ProcessEnv = { HOST: host };
/** Each process kind's NATS user and password (our own nats-server only; with NATS_URL set, the environment's). */
let natsEnv: (service: ServiceProcess) => NodeJS.ProcessEnv = () => ({});
if (natsPort !== undefined) {
  // Locked down even on one machine: one user per process kind, passwords generated once and kept
  // in .data/nats-users.json (mode 0600, never logged), permissions from libs/messaging/src/permissions.ts.
  const credentials = loadOrCreateNatsCredentials(join(dataDir, "nats-users.json"));
  // Its own process group: a terminal's Ctrl-C does not reach it; this script stops it after the services.
  const command = await natsServerCommand({ port: natsPort, storeDir: join(dataDir, "nats"), config: lockedNatsConfig(credentials), detached: true });
  nats = supervise({
    name: "nats-server",
    ...backoff,
    onConfigExit,
    start: () => {
      const child = command.spawn();
      recordPid(natsPidFile, child.pid);
      console.log(`[stack] nats-server started (pid ${child.pid})`);
      return child;
    },
  });
  try {
    const supervised = nats;
    await waitUntilListening({ what: "nats-server", port: command.port, host: "127.0.0.1", timeoutMs: startTimeout, abandoned: () => stopping, state: () => stateOf(supervised) });
  } catch (error) {
    console.error(`[stack] stopping: ${(error as Error).message}`);
    await stop(1);
  }
  env.NATS_URL = command.url;
  natsEnv = (service) => natsCredentialsEnv(credentials, service);
  console.log(`[stack] nats-server with JetStream at ${command.url} (data in ${shown}/nats; users and passwords in ${shown}/nats-users.json)`);
}

if (!process.env.API_KEY && !process.env.API_KEYS) {
  // A fresh machine still gets a working, non-guessable key; it is written to a file, not logged.
  const keyFile = join(dataDir, "api-key");
  if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(24).toString("base64url"), { mode: 0o600 });
  env.API_KEY = readFileSync(keyFile, "utf8").trim();
  console.log(`[stack] API_KEY is not set: using the generated key stored in ${shown}/api-key`);
}

if (!process.env.JOB_KEY_SECRET && !process.env.JOB_KEY_SECRETS) {
  // The gateway and the services must share it (it seals every provider key they pass on); kept across restarts so queued jobs stay readable.
  const secretFile = join(dataDir, "job-key-secret");
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(32).toString("base64url"), { mode: 0o600 });
  env.JOB_KEY_SECRET = readFileSync(secretFile, "utf8").trim();
  console.log(`[stack] JOB_KEY_SECRET is not set: using the generated secret stored in ${shown}/job-key-secret`);
}

if (!process.env.LLM_BUDGET_SECRET) {
  // Keys the provider budgets' ids in NATS; the same for every service, kept across restarts so the budgets stay one.
  const secretFile = join(dataDir, "llm-budget-secret");
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(32).toString("base64url"), { mode: 0o600 });
  env.LLM_BUDGET_SECRET = readFileSync(secretFile, "utf8").trim();
  console.log(`[stack] LLM_BUDGET_SECRET is not set: using the generated secret stored in ${shown}/llm-budget-secret`);
}

// A local try-out gets its API docs without a key; deployments keep them behind it (DOCS_PUBLIC).
if (!process.env.DOCS_PUBLIC) env.DOCS_PUBLIC = "true";

for (const service of stopping ? [] : SERVICES) {
  if (!existsSync(join(ROOT, `services/${service}/src/main.ts`))) continue;
  children.push(
    supervise({
      name: service,
      ...backoff,
      onConfigExit,
      start: () => {
        const child = spawnService(service, { ...env, ...natsEnv(service) });
        console.log(`[stack] ${service} started (pid ${child.pid})`);
        return child;
      },
    }),
  );
}

const wildcard = host === "0.0.0.0" || host === "::";
const origin = `http://${wildcard || host === "127.0.0.1" ? "localhost" : host.includes(":") ? `[${host}]` : host}:${port}`;
try {
  const gateway = children.find((child) => child.name === "gateway");
  const listening = await waitUntilListening({ what: "the gateway", port, host: wildcard ? "127.0.0.1" : host, timeoutMs: startTimeout, abandoned: () => stopping, state: () => (gateway ? stateOf(gateway) : "") });
  if (listening && !stopping) {
    console.log(`[stack] API:  ${origin}/v1  (health: ${origin}/health)${wildcard ? `; listening on every interface (HOST=${host})` : ""}`);
    console.log(`[stack] docs: ${origin}/docs  (OpenAPI: ${origin}/openapi.json)`);
    console.log(`[stack] console: ${origin}/console  (asks for the service key)`);
    console.log(`[stack] press Ctrl-C to stop`);
  }
} catch (error) {
  if (!stopping) console.error(`[stack] stopping: ${(error as Error).message}`);
  await stop(1);
}

/** A supervised process's state for a progress line. */
function stateOf(supervised: Supervised): string {
  const restarts = `${supervised.restarts} restart${supervised.restarts === 1 ? "" : "s"}`;
  return `${supervised.child ? `running, pid ${supervised.child.pid}` : "restarting"}, ${restarts}`;
}

async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all(children.map((child) => child.stop("SIGTERM")));
  // Last, once no service is connected: a service never sees its server go away while it stops.
  if (nats) {
    await nats.stop("SIGTERM");
    rmSync(natsPidFile, { force: true });
  }
  console.log(`[stack] stopped${nats ? " (services first, then nats-server)" : ""}`);
  process.exit(code);
}
