import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { ServiceError } from "@litrev/contracts";

/**
 * How a process proves itself to NATS (docs/security.md § NATS, docs/operations.md): a user name
 * and password (one user per process kind, with the permissions of libs/messaging/src/permissions.ts),
 * and the CA that signed the server's TLS certificate. All optional, so a process still talks to
 * an open server (the test stacks); never logged.
 */
export const NatsAuthEnv = z.object({
  NATS_USER: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, '-' and '_' only (it becomes the inbox prefix)")
    .optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  /** PEM file of the CA that signed nats-server's certificate: set it to require TLS. */
  NATS_TLS_CA_FILE: z.string().min(1).optional(),
});
export type NatsAuthEnv = z.infer<typeof NatsAuthEnv>;

export interface NatsAuth {
  user?: string | undefined;
  password?: string | undefined;
  tlsCaFile?: string | undefined;
}

/**
 * The credentials part of an env parsed with NatsAuthEnv. With a password and no NATS_USER, the
 * user is the process's own kind (`gateway`, `screening`, …): the users of the permission table
 * are named after them, so a deployment only has to supply each process its password.
 */
export const natsAuthFromEnv = (env: NatsAuthEnv, processKind: string): NatsAuth => ({
  user: env.NATS_USER ?? (env.NATS_PASSWORD ? processKind : undefined),
  password: env.NATS_PASSWORD,
  tlsCaFile: env.NATS_TLS_CA_FILE,
});

/**
 * Connection options for `auth`. A user gets its own inbox prefix (`_INBOX.<user>`), which is
 * the only inbox its NATS permissions let it subscribe to: replies meant for one user can never be
 * read by another.
 */
export function authOptions(auth: NatsAuth = {}): Partial<ConnectionOptions> {
  return {
    ...(auth.user ? { user: auth.user, pass: auth.password ?? "", inboxPrefix: `_INBOX.${auth.user}` } : {}),
    ...(auth.tlsCaFile ? { tls: { caFile: auth.tlsCaFile } } : {}),
  };
}

export interface NatsLinkOptions {
  servers: string;
  name: string;
  auth?: NatsAuth;
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
      ...authOptions(this.options.auth),
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
