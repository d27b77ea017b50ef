import { setSha256Backend } from "@nats-io/obj";
import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { ServiceError } from "@litrev/contracts";
import { retryWithPolicy, type Backoff } from "@litrev/retry";

// Object store puts and gets hash every chunk; the library's default is pure JS, on the event loop
// (a gateway staging creations spent 4.6 s of a 30 s attack in it). node:crypto's is native and
// fast. Process-wide, so set where every process connects, before any object store is used.
setSha256Backend("native");

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
  /** `connect`, `disconnect`, `reconnect`; `connect_failed` with the error and the wait before the next try. */
  onStatus?: (event: string, detail?: string) => void;
  /** Wait between first-connection attempts: jittered, doubling from base to max (default 250 ms to 5 s). */
  retry?: Backoff;
  /** How long one connection attempt may take before it counts as failed (default 20 s). */
  attemptTimeoutMs?: number;
}

/** `onStatus` for a process's log: a failed attempt as a warning, the rest as information. */
export const logNatsStatus =
  (logger: { info(details: object, message: string): void; warn(details: object, message: string): void }) =>
  (event: string, detail?: string): void =>
    event === "connect_failed" ? logger.warn({ event, detail }, "nats connection failed; trying again") : logger.info({ event, server: detail }, "nats connection");

/** The wait between first-connection attempts unless the caller sets another. */
export const FIRST_CONNECT_BACKOFF: Backoff = { baseDelayMs: 250, maxDelayMs: 5_000 };

/**
 * A NATS connection that is made in the background and kept alive forever (reconnect with no
 * attempt limit), so a process can start, and report itself degraded, while NATS is down.
 * The first connection is our own loop, not the client's `waitOnFirstConnect`: every failed
 * attempt (refused, timed out, credentials refused) is reported through `onStatus` with the wait
 * before the next one, so a process that cannot reach NATS at start-up says so in its log and
 * keeps trying until it is closed.
 */
export class NatsLink {
  #nc: NatsConnection | undefined;
  #connected = false;
  #closed = false;
  readonly #stop = new AbortController();
  readonly #ready: Promise<NatsConnection>;

  constructor(readonly options: NatsLinkOptions) {
    this.#ready = this.#connect();
    // Callers that never await ready() must not see an unhandled rejection.
    this.#ready.catch(() => undefined);
  }

  async #connect(): Promise<NatsConnection> {
    const attempt = () =>
      connect({
        ...authOptions(this.options.auth),
        servers: this.options.servers.split(","),
        name: this.options.name,
        timeout: this.options.attemptTimeoutMs ?? 20_000,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        pingInterval: 5_000,
        maxPingOut: 2,
        // Otherwise every request builds an Error up front for its stack (2–3% of a gateway's CPU
        // under load, profiled); a failed request is reported with its service and cause (rpc.ts).
        noAsyncTraces: true,
      });
    const nc = await retryWithPolicy(attempt, {
      deadlineAt: Number.POSITIVE_INFINITY,
      backoff: this.options.retry ?? FIRST_CONNECT_BACKOFF,
      isRetryable: () => !this.#closed,
      signal: this.#stop.signal,
      onRetry: ({ attempt: n, delayMs, error }) =>
        this.options.onStatus?.("connect_failed", `attempt ${n}: ${error instanceof Error ? error.message : String(error)}; next try in ${Math.round(delayMs)} ms`),
    });
    if (this.#closed) {
      await nc.close().catch(() => undefined);
      throw new ServiceError("service_unavailable", "The messaging link was closed before it connected");
    }
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
    this.#stop.abort();
    if (this.#nc && !this.#nc.isClosed()) await this.#nc.drain().catch(() => this.#nc?.close());
  }
}
