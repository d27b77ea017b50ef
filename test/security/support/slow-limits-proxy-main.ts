import { connect, createServer, type Socket } from "node:net";

/**
 * The slow limits proxy's own process (slow-limits-proxy.ts starts it): a loopback proxy in front of
 * nats-server that delays what a client sends to the limits bucket (every message whose subject
 * names `litrev_limits`: its reads, writes and stream requests) while a delay is set, and passes
 * everything else at once. It reads the client's side of the NATS protocol (control lines,
 * `PUB`/`HPUB` with their payloads); the server's side passes untouched. In a process of its own so
 * that relaying the gateways' NATS traffic never shares an event loop with the test's clients,
 * whose latencies are what the test measures.
 *
 *   argv: <nats url>; IPC in: { delayMs }; IPC out: { url } once listening, { delayed } after each delay set.
 */
const target = new URL(process.argv[2] ?? "nats://127.0.0.1:4222");
let delayMs = 0;
let delayed = 0;

const server = createServer((client) => {
  const upstream: Socket = connect(Number(target.port), target.hostname);
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
      if (isPub && delayMs > 0 && subject.includes("litrev_limits")) {
        delayed++;
        setTimeout(forward, delayMs, message);
      } else forward(message);
    }
  });
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("close", close).on("error", close);
  upstream.on("close", close).on("error", close);
});

process.on("message", (message: { delayMs: number }) => {
  delayMs = message.delayMs;
  process.send?.({ delayed });
});
// The test's end (or its crash) ends the proxy: nothing outlives the run.
process.on("disconnect", () => process.exit(0));
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  process.send?.({ url: `nats://127.0.0.1:${port}` });
});
