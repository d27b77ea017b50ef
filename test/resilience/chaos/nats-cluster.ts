import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { freePort, startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";

/**
 * Three nats-server processes in one cluster with JetStream, the production topology (streams and
 * buckets with NATS_REPLICAS=3). Each server keeps its ports and store across restarts, serves its
 * monitoring endpoint (where the nemesis finds the JetStream meta leader and each stream's leader)
 * and does not advertise its peers to clients, so the processes use exactly the URLs they are given.
 */

export interface NatsPeer {
  name: string;
  port: number;
  monitorPort: number;
  readonly paused: boolean;
  alive(): boolean;
}

interface Peer extends NatsPeer {
  routePort: number;
  storeDir: string;
  handle: NatsServerHandle | undefined;
  isPaused: boolean;
  launching: Promise<void> | undefined;
}

interface Jsz {
  meta_cluster?: { leader?: string };
  account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
}

/** A busy machine (2 cores, several suites at once) may take this long to elect a meta leader. */
const LEADER_WAIT_MS = 120_000;

export class NatsCluster {
  readonly #peers: Peer[];

  private constructor(peers: Peer[]) {
    this.#peers = peers;
  }

  /** Starts `size` servers and resolves once JetStream has a meta leader. */
  static async start(dir: string, size = 3): Promise<NatsCluster> {
    const peers: Peer[] = [];
    for (let i = 0; i < size; i++) {
      const storeDir = join(dir, `nats-${i}`);
      mkdirSync(storeDir, { recursive: true });
      peers.push({
        name: `nats-${i}`,
        port: await freePort(),
        monitorPort: await freePort(),
        routePort: await freePort(),
        storeDir,
        handle: undefined,
        isPaused: false,
        launching: undefined,
        get paused() {
          return this.isPaused;
        },
        alive() {
          const p = this.handle?.process;
          return p !== undefined && p.exitCode === null && p.signalCode === null;
        },
      });
    }
    const cluster = new NatsCluster(peers);
    try {
      await Promise.all(peers.map((p) => cluster.#launch(p)));
      await cluster.#waitForLeader(LEADER_WAIT_MS);
    } catch (error) {
      // Not one server left behind when the cluster does not come up.
      await Promise.allSettled(peers.map((p) => p.launching));
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get peers(): readonly NatsPeer[] {
    return this.#peers;
  }

  /** NATS_URL for the processes: every server. */
  get url(): string {
    return this.#peers.map((p) => `nats://127.0.0.1:${p.port}`).join(",");
  }

  /**
   * Starts a server that is not running; a second call while one is under way (the nemesis'
   * restart and a heal after another fault failed) waits for the first instead of starting a
   * second process on the same ports and store.
   */
  #launch(peer: Peer): Promise<void> {
    if (peer.alive()) return Promise.resolve();
    peer.launching ??= this.#spawn(peer).finally(() => (peer.launching = undefined));
    return peer.launching;
  }

  async #spawn(peer: Peer): Promise<void> {
    const routes = this.#peers.filter((p) => p !== peer).map((p) => JSON.stringify(`nats://127.0.0.1:${p.routePort}`));
    const config = [
      `server_name: ${JSON.stringify(peer.name)}`,
      `http: "127.0.0.1:${peer.monitorPort}"`,
      `cluster { name: "chaos", listen: "127.0.0.1:${peer.routePort}", routes: [${routes.join(", ")}], no_advertise: true }`,
    ].join("\n");
    peer.handle = await startNatsServer({ storeDir: peer.storeDir, port: peer.port, config });
    peer.isPaused = false;
  }

  async #jsz(query = ""): Promise<Jsz | undefined> {
    for (const peer of this.#peers.filter((p) => p.alive() && !p.isPaused)) {
      try {
        const res = await fetch(`http://127.0.0.1:${peer.monitorPort}/jsz${query}`, { signal: AbortSignal.timeout(2_000) });
        if (res.ok) return (await res.json()) as Jsz;
      } catch {
        // the next peer
      }
    }
    return undefined;
  }

  async #waitForLeader(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await this.#jsz())?.meta_cluster?.leader) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the NATS cluster elected no JetStream meta leader within ${timeoutMs} ms`);
  }

  /** The JetStream meta leader's name, as a live server sees it. */
  async metaLeader(): Promise<string | undefined> {
    return (await this.#jsz())?.meta_cluster?.leader;
  }

  /** Each stream's leader (streams, KV buckets and object stores alike). */
  async streamLeaders(): Promise<{ stream: string; leader: string }[]> {
    const jsz = await this.#jsz("?accounts=true&streams=true");
    return (jsz?.account_details ?? []).flatMap((a) =>
      (a.stream_detail ?? []).flatMap((s) => (s.cluster?.leader ? [{ stream: s.name, leader: s.cluster.leader }] : [])),
    );
  }

  #peer(name: string): Peer {
    const peer = this.#peers.find((p) => p.name === name);
    if (!peer) throw new Error(`no NATS server named ${name}`);
    return peer;
  }

  /** Stops a server (SIGCONT first if paused), leaves it down `downMs`, starts it on its ports and store. */
  async restart(name: string, signal: NodeJS.Signals, downMs: number): Promise<void> {
    const peer = this.#peer(name);
    if (peer.isPaused) peer.handle?.process.kill("SIGCONT");
    peer.isPaused = false;
    await peer.handle?.stop(signal);
    await new Promise((r) => setTimeout(r, downMs));
    await this.#launch(peer);
  }

  pause(name: string): void {
    const peer = this.#peer(name);
    if (!peer.alive() || peer.isPaused) return;
    peer.handle!.process.kill("SIGSTOP");
    peer.isPaused = true;
  }

  resume(name: string): void {
    const peer = this.#peer(name);
    if (!peer.isPaused) return;
    peer.isPaused = false;
    if (peer.alive()) peer.handle!.process.kill("SIGCONT");
  }

  /** Every server resumed and running, and a meta leader elected. */
  async heal(): Promise<void> {
    for (const peer of this.#peers) this.resume(peer.name);
    await Promise.all(this.#peers.filter((p) => !p.alive()).map((p) => this.#launch(p)));
    await this.#waitForLeader(LEADER_WAIT_MS);
  }

  async stop(): Promise<void> {
    for (const peer of this.#peers) this.resume(peer.name);
    await Promise.all(this.#peers.map((p) => p.handle?.stop()));
  }
}
