import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP relay on a fixed loopback port in front of one upstream server: the path of one process
 * (or of every MongoDB client) that the nemesis can take away without touching the server or the
 * other processes. Two ways to take it away:
 * - `sever`: every connection is cut and new ones are refused (the process sees its connection drop
 *   and reconnects in vain until `heal`);
 * - `stall`: connections stay open but no byte moves either way, and new connections hang (a silent
 *   partition: the process only notices through its own timeouts and pings). Bytes already read are
 *   held by the relay, the rest by TCP flow control, so a stall buffers at most a socket's worth.
 * `heal` reopens the port (after a sever) or lets the held traffic flow again (after a stall).
 */
export class TcpRelay {
  #server: Server | undefined;
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #port = 0;
  #stalled = false;
  /** Connections accepted since the relay opened (a figure for the run's log). */
  connections = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: () => number,
  ) {}

  get port(): number {
    return this.#port;
  }

  get state(): "open" | "severed" | "stalled" {
    return !this.#server ? "severed" : this.#stalled ? "stalled" : "open";
  }

  async open(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => this.#relay(client));
    server.listen(this.#port, "127.0.0.1");
    await once(server, "listening");
    this.#port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  #relay(client: Socket): void {
    this.connections++;
    const upstream = connect(this.targetPort(), this.host);
    const pair = { client, upstream };
    this.#pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.#pairs.delete(pair);
    };
    for (const s of [client, upstream]) {
      s.on("error", drop);
      s.on("close", drop);
    }
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.#stalled) this.#hold(pair);
  }

  #hold({ client, upstream }: { client: Socket; upstream: Socket }): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  }

  /** Every connection cut, new ones refused, until `heal`. */
  async sever(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.#stalled = false;
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** No byte moves on any connection, old or new, until `heal`. */
  stall(): void {
    this.#stalled = true;
    for (const pair of this.#pairs) this.#hold(pair);
  }

  async heal(): Promise<void> {
    if (this.#stalled) {
      this.#stalled = false;
      for (const { client, upstream } of this.#pairs) {
        client.pipe(upstream);
        upstream.pipe(client);
      }
    }
    await this.open();
  }

  async close(): Promise<void> {
    await this.sever();
  }
}
