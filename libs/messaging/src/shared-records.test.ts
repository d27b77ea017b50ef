import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { SharedRecords } from "./shared-records";

/** Two processes' worth of connections on one real nats-server: counters changed from both stay exact. */
describe("SharedRecords against a real nats-server", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let connections: NatsConnection[];
  let a: SharedRecords;
  let b: SharedRecords;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-limits-test-"));
    server = await startNatsServer({ storeDir });
    connections = await Promise.all([connect({ servers: server.url }), connect({ servers: server.url })]);
    a = await SharedRecords.open(connections[0]!);
    b = await SharedRecords.open(connections[1]!, { create: false });
  });
  afterAll(async () => {
    await Promise.all((connections ?? []).map((nc) => nc.close()));
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  /** Takes one of `cap` places: true when taken (the count before it decides, as a limit does). */
  const takePlace = (cap: number) => (current: { n: number } | undefined) => {
    const n = current?.n ?? 0;
    return n < cap ? { next: { n: n + 1 }, result: true } : { next: { n }, result: false };
  };

  it("admits exactly the cap from two writers racing, each burst in few writes", async () => {
    const attempts = Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).change("gateway.race", takePlace(25)));
    const taken = await Promise.all(attempts);
    expect(taken.filter(Boolean)).toHaveLength(25);
    // Both writers see the same record afterwards.
    expect(await a.change("gateway.race", (c: { n: number } | undefined) => ({ next: c!, result: c!.n }))).toBe(25);
    expect(await b.change("gateway.race", (c: { n: number } | undefined) => ({ next: c!, result: c!.n }))).toBe(25);
  });

  it("measures what a change costs (printed; one owner's requests one after another)", async () => {
    const n = 300;
    const started = performance.now();
    for (let i = 0; i < n; i++) await a.change("gateway.cost", takePlace(Number.MAX_SAFE_INTEGER));
    const alone = (performance.now() - started) / n;
    const racing = performance.now();
    for (let i = 0; i < n; i++) await (i % 2 ? a : b).change("gateway.cost2", takePlace(Number.MAX_SAFE_INTEGER));
    const alternating = (performance.now() - racing) / n;
    console.log(`shared limit record: ${alone.toFixed(2)} ms per change from one gateway, ${alternating.toFixed(2)} ms alternating between two`);
    expect(alone).toBeGreaterThan(0);
  });
});
