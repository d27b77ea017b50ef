import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { NatsLink } from "./connection";

/**
 * A process's first NATS connection (every service's start-up and the gateway's): an attempt that
 * fails is logged with the wait before the next one, and the link keeps trying until NATS answers.
 * On a busy machine nats-server may come up long after the processes that need it.
 */

const until = async (check: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((done) => setTimeout(done, 20));
  }
};

let link: NatsLink | undefined;
let nats: NatsServerHandle | undefined;
let storeDir: string | undefined;
afterEach(async () => {
  await link?.close();
  await nats?.stop();
  if (storeDir) rmSync(storeDir, { recursive: true, force: true });
  link = nats = storeDir = undefined;
});

describe("the first NATS connection", { timeout: 20_000 }, () => {
  it("logs each refused attempt with its wait, and connects once nats-server comes up", async () => {
    const port = await freePort();
    const events: [string, string | undefined][] = [];
    link = new NatsLink({ servers: `nats://127.0.0.1:${port}`, name: "first-connect-refused", retry: { baseDelayMs: 20, maxDelayMs: 100 }, onStatus: (event, detail) => events.push([event, detail]) });
    await until(() => events.filter(([event]) => event === "connect_failed").length >= 3, 10_000);
    expect(link.connected).toBe(false);
    expect(events[0]![1]).toMatch(/^attempt 1: .+; next try in \d+ ms$/);

    storeDir = mkdtempSync(join(tmpdir(), "litrev-first-connect-"));
    nats = await startNatsServer({ storeDir, port });
    await link.ready();
    expect(link.connected).toBe(true);
    expect(events.at(-1)![0]).toBe("connect");
  });

  it("gives up an attempt that hangs (a server too busy to answer) and tries again, saying so", async () => {
    // Accepts the connection and never says a word: what a starved nats-server looks like.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const { port } = silent.address() as { port: number };
    const failures: string[] = [];
    try {
      link = new NatsLink({ servers: `nats://127.0.0.1:${port}`, name: "first-connect-silent", attemptTimeoutMs: 200, retry: { baseDelayMs: 20, maxDelayMs: 50 }, onStatus: (event, detail) => event === "connect_failed" && failures.push(detail ?? "") });
      await until(() => failures.length >= 2, 10_000);
      expect(sockets.length).toBeGreaterThanOrEqual(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it("stops trying once closed: ready() rejects, no attempt after", async () => {
    const port = await freePort();
    let failures = 0;
    link = new NatsLink({ servers: `nats://127.0.0.1:${port}`, name: "first-connect-closed", retry: { baseDelayMs: 20, maxDelayMs: 50 }, onStatus: (event) => event === "connect_failed" && failures++ });
    await until(() => failures >= 1, 10_000);
    await link.close();
    await expect(link.ready()).rejects.toBeDefined();
    const after = failures;
    await new Promise((done) => setTimeout(done, 300));
    expect(failures).toBe(after);
  });
});
