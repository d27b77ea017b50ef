import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ServiceError } from "@litrev/contracts";

export interface NatsLinkOptions {
  servers: string;
  name: string;
  onStatus?: (event: string, detail?: string) => void;
}

/**
 * A NATS connection that is made in the background and kept alive forever (reconnect with no
 * attempt limit), so a process can start, and report itself degraded, while NATS is down.
 */
export class NatsLink {
  #nc: NatsConnection | undefined;
  #connected = false;
  #closed = false;
  readonly #ready: Promise<NatsConnection>;

  constructor(readonly options: NatsLinkOptions) {
    this.#ready = this.#connect();
    // Callers that never await ready() must not see an unhandled rejection.
    this.#ready.catch(() => undefined);
  }

  async #connect(): Promise<NatsConnection> {
    const nc = await connect({
      servers: this.options.servers.split(","),
      name: this.options.name,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 5_000,
      maxPingOut: 2,
    });
    this.#nc = nc;
    this.#connected = true;
    this.options.onStatus?.("connect", nc.getServer());
    void this.#watch(nc);
    return nc;
  }

  async #watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") this.#connected = false;
      if (status.type === "reconnect") this.#connected = true;
      if (status.type === "disconnect" || status.type === "reconnect") {
        this.options.onStatus?.(status.type, nc.getServer());
      }
    }
  }

  /** Resolves once the first connection is made. */
  ready(): Promise<NatsConnection> {
    return this.#ready;
  }

  get connected(): boolean {
    return this.#connected && !this.#closed && !!this.#nc && !this.#nc.isClosed();
  }

  /** The live connection, or a retryable error when NATS is unreachable right now. */
  connection(): NatsConnection {
    if (!this.#nc || !this.connected) {
      throw new ServiceError("service_unavailable", "The messaging system (NATS) is unreachable; retry shortly");
    }
    return this.#nc;
  }

  /** The connection whether or not it is currently up (for subscriptions that survive reconnects). */
  get raw(): NatsConnection | undefined {
    return this.#nc;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#nc && !this.#nc.isClosed()) await this.#nc.drain().catch(() => this.#nc?.close());
  }
}
