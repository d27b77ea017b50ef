import { connect, createServer, type Socket } from "node:net";

/**
 * A loopback proxy in front of nats-server that delays what a client sends to the limits bucket
 * (every message whose subject names `litrev_limits`: its reads, writes and stream requests) once
 * `slow` is set, and passes everything else at once: the bucket answers late while the rest of
 * NATS does not, as when an attacker's load slows it. It reads the client's side of the NATS
 * protocol (control lines, `PUB`/`HPUB` with their payloads); the server's side passes untouched.
 */
export interface SlowLimitsProxy {
  url: string;
  /** Delay (ms) of the limits bucket's messages from now on; 0 passes them at once. */
  delayMs: number;
  /** Messages delayed so far. */
  delayed: number;
  close(): Promise<void>;
}

export async function slowLimitsProxy(natsUrl: string): Promise<SlowLimitsProxy> {
  const target = new URL(natsUrl);
  const sockets = new Set<Socket>();
  const proxy: SlowLimitsProxy = {
    url: "",
    delayMs: 0,
    delayed: 0,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    upstream.pipe(client);
    const forward = (message: Buffer) => {
      if (!upstream.destroyed) upstream.write(message);
    };
    let buffer: Buffer = Buffer.alloc(0);
    client.on("data", (data: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, data]) : data;
      for (;;) {
        const eol = buffer.indexOf("\r\n");
        if (eol < 0) return;
        const line = buffer.subarray(0, eol).toString("latin1");
        const [op = "", subject = "", ...args] = line.split(/\s+/);
        const isPub = /^h?pub$/i.test(op);
        // PUB <subject> [reply] <bytes>, HPUB <subject> [reply] <header bytes> <total bytes>: the payload and its CRLF follow.
        const end = isPub ? eol + 2 + Number(args.at(-1)) + 2 : eol + 2;
        if (buffer.length < end) return;
        const message = Buffer.from(buffer.subarray(0, end));
        buffer = buffer.subarray(end);
        if (isPub && proxy.delayMs > 0 && subject.includes("litrev_limits")) {
          proxy.delayed++;
          setTimeout(forward, proxy.delayMs, message);
        } else forward(message);
      }
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  proxy.url = `nats://127.0.0.1:${address.port}`;
  return proxy;
}
