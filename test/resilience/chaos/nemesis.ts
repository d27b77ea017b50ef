import type { Cluster, Node } from "./cluster";
import type { FaultKind, History } from "./history";

/**
 * The nemesis: faults chosen by a seeded generator so a run can be replayed, each recorded as an
 * invoke when it strikes and an ok once it has healed (info if healing failed). With `lanes` > 1
 * several faults run at once (overlapping windows), never two on the same process or resource:
 * - `kill`: SIGKILL a screening or indexer process (a gateway one time in five), restart it after a
 *   short down time;
 * - `pause`: SIGSTOP one for a while (sometimes longer than the job ack wait, so its job is
 *   redelivered while the paused worker still believes it owns it), then SIGCONT;
 * - `partition`: one process's own TCP path to nats-server (its relay) severed or stalled briefly,
 *   while every other process keeps NATS;
 * - `split-lease`: a worker's path severed or stalled for longer than the ack wait: its jobs are
 *   redelivered to the other worker while the cut-off one, still running and still reaching the
 *   provider, believes it holds them; once healed it must find itself fenced out;
 * - `nats-restart`: stop nats-server (SIGTERM or SIGKILL) and start it on the same port and store;
 * - `mongo-stop`: cut the relay in front of MongoDB and reopen it (only when MONGO_URL is set);
 * - against a NATS cluster: `meta-leader-kill` and `stream-leader-kill` SIGKILL the JetStream meta
 *   leader or the leader of a random stream (as the monitoring endpoint names them) and restart it
 *   on its ports and store; `nats-pause` SIGSTOPs a server for a while. One NATS fault at a time,
 *   so two of three servers always run (a quorum may still be lost to an overlapping pause of a
 *   process, never to the nemesis' NATS faults alone).
 */

export interface NemesisOptions {
  cluster: Cluster;
  history: History;
  kinds: FaultKind[];
  seed: number;
  /** Quiet time between faults. */
  gapMs: [number, number];
  /** How long a SIGSTOP lasts. */
  pauseMs: [number, number];
  /** How long a killed process or nats-server stays down. */
  downMs: [number, number];
  /** How long a `partition` lasts. */
  partitionMs?: [number, number];
  /** How long a `split-lease` lasts: longer than the ack wait. */
  splitLeaseMs?: [number, number];
  /** Faults that may run at once (default 1). */
  lanes?: number;
  log?: (line: string) => void;
}

/** mulberry32: a small seeded generator, enough to replay a run's choices. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Nemesis {
  #running = false;
  #loops: Promise<void>[] = [];
  readonly #wakes = new Set<() => void>();
  readonly #random: () => number;
  /** Processes and resources under a fault now (a second fault picks another). */
  readonly #busy = new Set<string>();
  faults = 0;
  /** Most faults in progress at one moment. */
  maxOverlap = 0;

  constructor(private readonly options: NemesisOptions) {
    this.#random = seeded(options.seed);
  }

  start(): void {
    if (this.options.kinds.length === 0) return;
    this.#running = true;
    const lanes = Math.max(1, this.options.lanes ?? 1);
    // Lanes start a little apart, so their faults overlap in varied ways rather than in lockstep.
    this.#loops = Array.from({ length: lanes }, (_, lane) => this.#run(lane));
  }

  /** Lets the faults in progress heal, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    for (const wake of this.#wakes) wake();
    await Promise.all(this.#loops);
  }

  #between([min, max]: [number, number]): number {
    return Math.round(min + this.#random() * (max - min));
  }

  #pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#random() * list.length)]!;
  }

  /** A live process under no other fault, a worker four times in five (a gateway fault costs clients, not jobs). */
  #target(workersOnly = false): Node | undefined {
    const free = this.options.cluster.nodes.filter((n) => n.alive() && !this.#busy.has(n.name));
    const gateways = workersOnly ? [] : free.filter((n) => n.role === "gateway");
    const workers = free.filter((n) => n.role !== "gateway");
    const pool = gateways.length && (!workers.length || this.#random() < 0.2) ? gateways : workers;
    return pool.length ? this.#pick(pool) : undefined;
  }

  /** The server a NATS-cluster fault strikes: the meta leader, a random stream's leader, or any server. */
  async #natsTarget(kind: FaultKind): Promise<{ name: string; stream?: string }> {
    const nats = this.options.cluster.natsCluster;
    if (!nats) throw new Error(`${kind} needs the NATS cluster mode`);
    const live = nats.peers.filter((p) => p.alive() && !p.paused);
    if (kind === "meta-leader-kill") {
      const leader = await nats.metaLeader();
      if (leader) return { name: leader };
    } else if (kind === "stream-leader-kill") {
      const leaders = await nats.streamLeaders();
      if (leaders.length) {
        const { stream, leader } = this.#pick(leaders);
        return { name: leader, stream };
      }
    }
    return { name: this.#pick(live.length ? live : nats.peers).name };
  }

  async #sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      let wake: () => void = resolve;
      const timer = setTimeout(() => (this.#wakes.delete(wake), resolve()), ms);
      wake = () => (clearTimeout(timer), this.#wakes.delete(wake), resolve());
      this.#wakes.add(wake);
    });
  }

  #forced(turn: number): FaultKind | undefined {
    const { kinds } = this.options;
    if (kinds.includes("split-lease")) return "split-lease";
    if (kinds.includes("stream-leader-kill") && kinds.includes("meta-leader-kill")) return turn % 10 === 1 ? "stream-leader-kill" : "meta-leader-kill";
    return undefined;
  }

  async #run(lane: number): Promise<void> {
    const { cluster, history, kinds } = this.options;
    if (lane > 0) await this.#sleep(this.#between(this.options.gapMs) * lane);
    for (let turn = 0; this.#running; turn++) {
      await this.#sleep(this.#between(this.options.gapMs));
      if (!this.#running) return;
      // The split lease is the case fencing exists for, and a leader kill the one a NATS cluster is
      // for: the first lane strikes one on its second turn and every fifth after, so even a short
      // run has one (on a cluster, stream and meta leaders by turns).
      const kind = lane === 0 && turn % 5 === 1 ? (this.#forced(turn) ?? this.#pick(kinds)) : this.#pick(kinds);
      const natsFault = kind === "nats-restart" || kind === "meta-leader-kill" || kind === "stream-leader-kill" || kind === "nats-pause";
      const shared = natsFault ? "nats-server" : kind === "mongo-stop" ? "mongodb" : undefined;
      const target = shared ? undefined : this.#target(kind === "split-lease");
      if (shared ? this.#busy.has(shared) : !target) continue; // all taken: the lane waits for its next turn
      // Claimed before anything is awaited: the other lane checks the same set meanwhile (two NATS
      // faults at once took two of three servers, and the cluster's quorum, when this came later).
      const busy = shared ?? target!.name;
      this.#busy.add(busy);
      this.maxOverlap = Math.max(this.maxOverlap, this.#busy.size);
      const mode = this.#random() < 0.5 ? "sever" : "stall";
      const span = kind === "partition" ? (this.options.partitionMs ?? [1_000, 3_000]) : (this.options.splitLeaseMs ?? [6_000, 10_000]);
      const lasts = kind === "partition" || kind === "split-lease" ? this.#between(span) : 0;
      const peer = shared === "nats-server" && kind !== "nats-restart" ? await this.#natsTarget(kind) : undefined;
      const fault =
        kind === "nats-restart"
          ? { kind, target: "nats-server", role: "nats" as const }
          : peer
            ? { kind, target: peer.name, role: "nats" as const, ...(peer.stream ? { detail: `leader of ${peer.stream}` } : {}) }
          : kind === "mongo-stop"
            ? { kind, target: "mongodb", role: "mongo" as const }
              : { kind, target: target!.name, role: target!.role, ...(lasts ? { detail: `${mode} ${lasts} ms` } : {}) };
      const complete = history.invoke(`nemesis-${lane}`, { f: "fault", fault });
      const started = Date.now();
      try {
        if (kind === "kill") {
          await target!.kill("SIGKILL");
          await new Promise((r) => setTimeout(r, this.#between(this.options.downMs)));
          await target!.start();
        } else if (kind === "pause") {
          target!.pause();
          await new Promise((r) => setTimeout(r, this.#between(this.options.pauseMs)));
          target!.resume();
        } else if (kind === "partition" || kind === "split-lease") {
          const relay = target!.relay!;
          if (mode === "sever") await relay.sever();
          else relay.stall();
          await new Promise((r) => setTimeout(r, lasts));
          await relay.heal();
        } else if (kind === "meta-leader-kill" || kind === "stream-leader-kill") {
          await cluster.natsCluster!.restart(peer!.name, "SIGKILL", this.#between(this.options.downMs));
        } else if (kind === "nats-pause") {
          cluster.natsCluster!.pause(peer!.name);
          await new Promise((r) => setTimeout(r, this.#between(this.options.pauseMs)));
          cluster.natsCluster!.resume(peer!.name);
        } else if (kind === "nats-restart") {
          await cluster.restartNats(this.#between(this.options.downMs), this.#random() < 0.5 ? "SIGTERM" : "SIGKILL");
        } else if (kind === "mongo-stop") {
          await cluster.mongo!.cut();
          await new Promise((r) => setTimeout(r, this.#between(this.options.downMs) * 2));
          await cluster.mongo!.open();
        }
        complete("ok");
        this.faults++;
        this.options.log?.(`[nemesis] #${this.faults} ${kind} ${fault.target}${lasts ? ` (${mode})` : ""}: healed after ${Date.now() - started} ms`);
      } catch (error) {
        complete("info", { error: (error as Error).message.slice(0, 200) });
        this.options.log?.(`[nemesis] ${kind} ${fault.target}: did not heal (${(error as Error).message}); healing the cluster`);
        await cluster.heal().catch(() => undefined);
      } finally {
        this.#busy.delete(busy);
      }
    }
  }
}
