import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { freePort, spawnService, startNatsServer, stopProcess, type NatsServerHandle } from "../../../scripts/lib/launch";
import { TEST_API_KEY } from "../../support/stack";
import { NatsCluster } from "./nats-cluster";
import { TcpRelay } from "./relay";

/**
 * The processes of a chaos run, each behind a handle the nemesis can kill, restart, pause and
 * resume: nats-server (restarted on the same port and store), gateways (restarted on the same
 * port, so clients keep their URLs), screening and indexer workers, and, when MONGO_URL is set, a
 * TCP relay in front of MongoDB that can be cut and reopened. Logs go to files in `dir`, appended
 * across restarts, so memory stays bounded however long the run.
 */

export type Role = "gateway" | "screening" | "indexer";

export interface Node {
  name: string;
  role: Role;
  /** Gateways: the HTTP port, kept across restarts. */
  readonly port: number | undefined;
  readonly child: ChildProcess | undefined;
  readonly paused: boolean;
  /** The process's own TCP path to nats-server (its NATS_URL), which a partition takes away (none against a NATS cluster). */
  relay: TcpRelay | undefined;
  /** Log lines of runs that found their job taken over by another worker (a fenced-out stale run). */
  readonly takeovers: number;
  alive(): boolean;
  /** Starts a new run and resolves once it serves (gateway: listens; service: "service ready"). */
  start(): Promise<void>;
  /** Sends `signal` and waits for the exit (SIGCONT first if paused). */
  kill(signal: NodeJS.Signals): Promise<void>;
  pause(): void;
  resume(): void;
}

export interface ClusterOptions {
  dir: string;
  gateways: number;
  screening: number;
  indexer: number;
  /** Environment of every gateway and service. */
  env: NodeJS.ProcessEnv;
  /** MongoDB to relay (chaos runs only stop it when set). */
  mongoUrl?: string | undefined;
  /** Three clustered nats-servers with NATS_REPLICAS=3 instead of one (no per-process relays then). */
  natsCluster?: boolean;
}

export interface Cluster {
  natsUrl: string;
  gatewayUrls: string[];
  nodes: Node[];
  mongo: MongoRelay | undefined;
  /** The three servers, in cluster mode. */
  natsCluster: NatsCluster | undefined;
  /** Processes started again after exiting during the cluster's start-up. */
  startRetries: number;
  restartNats(downMs: number, signal: NodeJS.Signals): Promise<void>;
  /** Resumes paused nodes and starts dead ones (after the nemesis stopped). */
  heal(): Promise<void>;
  stop(): Promise<void>;
}

const READY = '"service ready"';
// The gateway's own word that it listens: a port that merely accepts connections may be another
// process's, taken between freePort() and the gateway's bind on a busy machine.
const GATEWAY_READY = '"gateway listening"';

const TAKEN_OVER = "taken over by another worker";
/** A process's start-up budget: on a busy machine, with leaders being elected after a fault, 60 s was not always enough. */
const READY_WAIT_MS = 120_000;

function node(name: string, role: Role, port: number | undefined, env: NodeJS.ProcessEnv, log: WriteStream, relay: TcpRelay | undefined): Node {
  let child: ChildProcess | undefined;
  let paused = false;
  let run = 0;
  let takeovers = 0;
  const alive = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    name,
    role,
    get port() {
      return port;
    },
    get child() {
      return child;
    },
    get paused() {
      return paused;
    },
    get takeovers() {
      return takeovers;
    },
    relay,
    alive,
    async start() {
      if (alive()) return;
      paused = false;
      const current = spawnService(
        role,
        { ...env, ...(relay ? { NATS_URL: `nats://127.0.0.1:${relay.port}` } : {}), ...(port ? { PORT: String(port), HOST: "127.0.0.1" } : {}) },
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      child = current;
      log.write(`\n===== ${name} run ${++run} (pid ${current.pid}) at ${new Date().toISOString()} =====\n`);
      let tail = "";
      let ready = false;
      let line = "";
      const onData = (chunk: Buffer) => {
        log.write(chunk);
        // Whole lines only (a chunk may end mid-line); a line longer than 4 KiB is not ours to count.
        const lines = (line + chunk.toString()).split("\n");
        line = lines.pop()!.slice(-4_096);
        for (const l of lines) if (l.includes(TAKEN_OVER)) takeovers++;
        if (ready) return;
        tail = (tail + chunk.toString()).slice(-4_096);
        if (tail.includes(port ? GATEWAY_READY : READY)) ready = true;
      };
      current.stdout!.on("data", onData);
      current.stderr!.on("data", onData);
      const deadline = Date.now() + READY_WAIT_MS;
      while (!ready) {
        if (current.exitCode !== null || current.signalCode !== null) {
          // The port was taken before this gateway's first bind: a fresh one (clients learn gateway URLs after the start).
          if (port && run === 1 && tail.includes("EADDRINUSE")) {
            port = await freePort();
            run = 0;
            return this.start();
          }
          throw new Error(`${name} exited before it was ready (see ${name}.log)`);
        }
        if (Date.now() > deadline) {
          // Not left running behind the error: a retry (or the cluster's stop) starts from nothing.
          current.kill("SIGKILL");
          throw new Error(`${name} not ready within ${READY_WAIT_MS / 1000} s (see ${name}.log)`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async kill(signal) {
      const current = child;
      if (!current || !alive()) return;
      const exited = once(current, "exit");
      if (paused) current.kill("SIGCONT");
      paused = false;
      if (signal === "SIGKILL") {
        current.kill("SIGKILL");
        await exited;
      } else await stopProcess(current, signal, 10_000);
    },
    pause() {
      if (!alive() || paused) return;
      child!.kill("SIGSTOP");
      paused = true;
    },
    resume() {
      if (!paused) return;
      paused = false;
      if (alive()) child!.kill("SIGCONT");
    },
  };
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  mkdirSync(options.dir, { recursive: true });
  const storeDir = join(options.dir, "nats");
  const natsCluster = options.natsCluster ? await NatsCluster.start(storeDir) : undefined;
  let nats: NatsServerHandle | undefined = natsCluster ? undefined : await startNatsServer({ storeDir });
  const natsUrl = natsCluster?.url ?? nats!.url;
  const logs: WriteStream[] = [];
  const logFor = (name: string) => {
    const stream = createWriteStream(join(options.dir, `${name}.log`), { flags: "a" });
    logs.push(stream);
    return stream;
  };
  const mongo = options.mongoUrl ? await MongoRelay.open(options.mongoUrl) : undefined;
  const env: NodeJS.ProcessEnv = {
    API_KEY: TEST_API_KEY,
    JOB_KEY_SECRET: randomBytes(32).toString("base64url"),
    LOG_LEVEL: "info",
    SHUTDOWN_TIMEOUT_MS: "3000",
    ...options.env,
    NATS_URL: natsUrl,
    ...(natsCluster ? { NATS_REPLICAS: "3" } : {}),
    MONGO_URL: mongo ? mongo.url(`litrev_chaos_${process.pid}_${Date.now()}`) : "",
  };
  const nodes: Node[] = [];
  const relays: TcpRelay[] = [];
  const relayFor = async () => {
    if (!nats) return undefined;
    const server = nats;
    const relay = new TcpRelay("127.0.0.1", () => server.port);
    await relay.open();
    relays.push(relay);
    return relay;
  };
  for (let i = 0; i < options.gateways; i++) nodes.push(node(`gateway-${i}`, "gateway", await freePort(), env, logFor(`gateway-${i}`), await relayFor()));
  for (const role of ["screening", "indexer"] as const) {
    for (let i = 0; i < options[role]; i++) nodes.push(node(`${role}-${i}`, role, undefined, env, logFor(`${role}-${i}`), await relayFor()));
  }
  // A process that exits at start-up is started again, as a supervisor would (`npm start`, Kubernetes):
  // on a fresh cluster replicated streams take a moment to settle after their creation, and a process
  // may outlast its start-up budget while leaders are elected after a fault. Counted and reported.
  const supervised = async (n: Node) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await n.start();
      } catch (error) {
        if (attempt >= 3) throw error;
        cluster.startRetries++;
      }
    }
  };
  const cluster: Cluster = {
    natsUrl,
    natsCluster,
    startRetries: 0,
    gatewayUrls: [],
    nodes,
    mongo,
    async restartNats(downMs, signal) {
      if (!nats) throw new Error("nats-restart needs the single nats-server (the cluster mode has its own faults)");
      await nats.stop(signal);
      await new Promise((r) => setTimeout(r, downMs));
      nats = await startNatsServer({ storeDir, port: nats.port });
    },
    async heal() {
      for (const n of nodes) n.resume();
      await Promise.all(relays.map((r) => r.heal()));
      if (nats && (nats.process.exitCode !== null || nats.process.signalCode !== null)) nats = await startNatsServer({ storeDir, port: nats.port });
      await natsCluster?.heal();
      await mongo?.open();
      await Promise.all(nodes.map(supervised));
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill("SIGTERM")));
      await nats?.stop();
      await natsCluster?.stop();
      await Promise.all(relays.map((r) => r.close()));
      await mongo?.cut();
      await Promise.all(logs.map((s) => new Promise((r) => s.end(r))));
    },
  };
  try {
    if (!natsCluster) await Promise.all(nodes.map((n) => n.start()));
    else {
      // The first process of each kind starts alone (it creates the streams), the others together.
      const firsts = nodes.filter((n, i) => nodes.findIndex((m) => m.role === n.role) === i);
      for (const n of firsts) await supervised(n);
      await Promise.all(nodes.filter((n) => !firsts.includes(n)).map(supervised));
    }
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  cluster.gatewayUrls = nodes.filter((n) => n.port).map((n) => `http://127.0.0.1:${n.port}`);
  return cluster;
}

/**
 * "Stopping MongoDB" without owning the server: services reach it through this relay, which the
 * nemesis cuts (every connection dropped, new ones refused) and reopens on the same port.
 */
export class MongoRelay {
  readonly #relay: TcpRelay;

  private constructor(private readonly target: URL) {
    this.#relay = new TcpRelay(target.hostname, () => Number(target.port || 27017));
  }

  static async open(mongoUrl: string): Promise<MongoRelay> {
    const relay = new MongoRelay(new URL(mongoUrl));
    await relay.open();
    return relay;
  }

  /** Why a MONGO_URL cannot be relayed (multi-host, TLS), or undefined. */
  static unsupported(mongoUrl: string): string | undefined {
    if (!mongoUrl.startsWith("mongodb://") || mongoUrl.slice(10).split("/")[0]!.includes(",")) return "needs a single-host mongodb:// MONGO_URL (the relay forwards one host)";
    const url = new URL(mongoUrl);
    if (/^(true|1)$/i.test(url.searchParams.get("tls") ?? url.searchParams.get("ssl") ?? "")) return "needs a MONGO_URL without TLS (the relay changes the host name)";
    return undefined;
  }

  /** MONGO_URL for the services: the relay's address, database `db`. */
  url(db: string): string {
    const relayed = new URL(this.target.toString());
    relayed.host = `127.0.0.1:${this.#relay.port}`;
    relayed.pathname = `/${db}`;
    relayed.searchParams.set("directConnection", "true");
    if (this.target.username && !this.target.searchParams.has("authSource")) relayed.searchParams.set("authSource", this.target.pathname.slice(1) || "admin");
    return relayed.toString();
  }

  open(): Promise<void> {
    return this.#relay.heal();
  }

  cut(): Promise<void> {
    return this.#relay.sever();
  }
}
