/**
 * `npm start`: the whole stack on one machine. Starts nats-server (JetStream, data in .data/nats,
 * one user per process kind with generated passwords) unless NATS_URL is set, then the gateway and
 * every service as separate processes, each kept running by a supervisor: a process that crashes is restarted with backoff (its jobs resume from
 * their checkpoints) instead of stopping the stack. Ctrl-C (SIGINT or SIGTERM) stops them in order:
 * pending restarts cancelled, services first, NATS last.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ROOT, SERVICES, spawnService, startNatsServer, waitForPort, type NatsServerHandle, type ServiceProcess } from "./lib/launch";
import { loadOrCreateNatsCredentials, lockedNatsConfig, natsCredentialsEnv } from "./lib/nats-auth";
import { supervise, type Supervised } from "./lib/supervise";

const dataDir = join(ROOT, ".data");
mkdirSync(dataDir, { recursive: true });

let nats: NatsServerHandle | undefined;
const env: NodeJS.ProcessEnv = {};
/** Each process kind's NATS user and password (our own nats-server only; with NATS_URL set, the environment's). */
let natsEnv: (service: ServiceProcess) => NodeJS.ProcessEnv = () => ({});
if (!process.env.NATS_URL) {
  // Locked down even on one machine: one user per process kind, passwords generated once and kept
  // in .data/nats-users.json (mode 0600, never logged), permissions from libs/messaging/src/permissions.ts.
  const credentials = loadOrCreateNatsCredentials(join(dataDir, "nats-users.json"));
  nats = await startNatsServer({ port: Number(process.env.NATS_PORT ?? 4222), storeDir: join(dataDir, "nats"), config: lockedNatsConfig(credentials) });
  env.NATS_URL = nats.url;
  natsEnv = (service) => natsCredentialsEnv(credentials, service);
  console.log(`[stack] nats-server with JetStream at ${nats.url} (data in .data/nats; users and passwords in .data/nats-users.json)`);
}

if (!process.env.API_KEY && !process.env.API_KEYS) {
  // A fresh machine still gets a working, non-guessable key; it is written to a file, not logged.
  const keyFile = join(dataDir, "api-key");
  if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(24).toString("base64url"), { mode: 0o600 });
  env.API_KEY = readFileSync(keyFile, "utf8").trim();
  console.log(`[stack] API_KEY is not set: using the generated key stored in .data/api-key`);
}

if (!process.env.JOB_KEY_SECRET && !process.env.JOB_KEY_SECRETS) {
  // The gateway and the services must share it (it seals every provider key they pass on); kept across restarts so queued jobs stay readable.
  const secretFile = join(dataDir, "job-key-secret");
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(32).toString("base64url"), { mode: 0o600 });
  env.JOB_KEY_SECRET = readFileSync(secretFile, "utf8").trim();
  console.log(`[stack] JOB_KEY_SECRET is not set: using the generated secret stored in .data/job-key-secret`);
}

// A local try-out gets its API docs without a key; deployments keep them behind it (DOCS_PUBLIC).
if (!process.env.DOCS_PUBLIC) env.DOCS_PUBLIC = "true";

// Restart backoff: 0.5 s doubling to 30 s; a run that lasted a minute counts as stable and resets it.
const backoff = { initialDelayMs: 500, maxDelayMs: 30_000, stableMs: 60_000 };
let stopping = false;
const children: Supervised[] = [];
for (const service of SERVICES) {
  if (!existsSync(join(ROOT, `services/${service}/src/main.ts`))) continue;
  children.push(
    supervise({
      name: service,
      ...backoff,
      start: () => {
        const child = spawnService(service, { ...env, ...natsEnv(service) });
        console.log(`[stack] ${service} started (pid ${child.pid})`);
        return child;
      },
    }),
  );
}

// Registered before waiting for the gateway, so Ctrl-C during start-up also stops everything.
process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));

const port = Number(process.env.PORT ?? 8000);
try {
  await waitForPort(port, 60_000);
  console.log(`[stack] API:  http://localhost:${port}/v1  (health: http://localhost:${port}/health)`);
  console.log(`[stack] docs: http://localhost:${port}/docs  (OpenAPI: http://localhost:${port}/openapi.json)`);
  console.log(`[stack] console: http://localhost:${port}/console  (asks for the service key)`);
  console.log(`[stack] press Ctrl-C to stop`);
} catch (error) {
  console.error(`[stack] the gateway did not start: ${(error as Error).message}`);
  await stop(1);
}

async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all(children.map((child) => child.stop("SIGTERM")));
  if (nats) await nats.stop();
  process.exit(code);
}
