import type { Cluster, Node } from "./cluster";
import type { FaultKind, History } from "./history";

/**
 * The nemesis: one fault at a time, each recorded as an invoke when it strikes and an ok once it
 * has healed (info if healing failed), chosen by a seeded generator so a run can be replayed:
 * - `kill`: SIGKILL a screening or indexer process (a gateway one time in five), restart it after a
 *   short down time;
 * - `pause`: SIGSTOP one for a while (sometimes longer than the job ack wait, so its job is
 *   redelivered while the paused worker still believes it owns it), then SIGCONT;
 * - `nats-restart`: stop nats-server (SIGTERM or SIGKILL) and start it on the same port and store;
 * - `mongo-stop`: cut the relay in front of MongoDB and reopen it (only when MONGO_URL is set).
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
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  readonly #random: () => number;
  faults = 0;

  constructor(private readonly options: NemesisOptions) {
    this.#random = seeded(options.seed);
  }

  start(): void {
    if (this.options.kinds.length === 0) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Lets the fault in progress heal, then stops. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  #between([min, max]: [number, number]): number {
    return Math.round(min + this.#random() * (max - min));
  }

  #pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.#random() * list.length)]!;
  }

  /** A live process, a worker four times in five (a gateway fault costs clients, not jobs). */
  #target(): Node {
    const alive = this.options.cluster.nodes.filter((n) => n.alive());
    const gateways = alive.filter((n) => n.role === "gateway");
    const workers = alive.filter((n) => n.role !== "gateway");
    return this.#pick(gateways.length && (!workers.length || this.#random() < 0.2) ? gateways : workers);
  }

  async #sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => (clearTimeout(timer), resolve());
    });
    this.#wake = undefined;
  }

  async #run(): Promise<void> {
    const { cluster, history, kinds } = this.options;
    while (this.#running) {
      await this.#sleep(this.#between(this.options.gapMs));
      if (!this.#running) return;
      const kind = this.#pick(kinds);
      const target: Node | undefined = kind === "kill" || kind === "pause" ? this.#target() : undefined;
      const fault =
        kind === "nats-restart"
          ? { kind, target: "nats-server", role: "nats" as const }
          : kind === "mongo-stop"
            ? { kind, target: "mongodb", role: "mongo" as const }
            : { kind, target: target!.name, role: target!.role };
      const complete = history.invoke("nemesis", { f: "fault", fault });
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
        } else if (kind === "nats-restart") {
          await cluster.restartNats(this.#between(this.options.downMs), this.#random() < 0.5 ? "SIGTERM" : "SIGKILL");
        } else if (kind === "mongo-stop") {
          await cluster.mongo!.cut();
          await new Promise((r) => setTimeout(r, this.#between(this.options.downMs) * 2));
          await cluster.mongo!.open();
        }
        complete("ok");
        this.faults++;
        this.options.log?.(`[nemesis] #${this.faults} ${kind} ${fault.target}: healed after ${Date.now() - started} ms`);
      } catch (error) {
        complete("info", { error: (error as Error).message.slice(0, 200) });
        this.options.log?.(`[nemesis] ${kind} ${fault.target}: did not heal (${(error as Error).message}); healing the cluster`);
        await cluster.heal().catch(() => undefined);
      }
    }
  }
}
