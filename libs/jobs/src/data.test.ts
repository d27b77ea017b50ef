import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { JobData } from "./data";

/**
 * The client's object reader waits for the last chunk forever; chunks purged by a concurrent
 * delete never come. These tests purge an object's chunks underneath a reader to pin down what
 * JobData does then (a finished screening result read by two gateways, one of which deletes it).
 */
describe("JobData reads against a real nats-server", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let data: JobData;
  const bucket = "litrev_jobdata_test";

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-jobdata-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    data = new JobData(await new Objm(nc).create(bucket), { stallCheckMs: 200, readBudgetMs: 1_500 });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const big = (n: number) => ({ items: Array.from({ length: n }, (_, i) => ({ id: `p${i}`, reasoning: "x".repeat(200) })) });

  /** Removes the chunks but keeps the metadata: the object looks present and can never be read. */
  async function purgeChunks(name: string): Promise<void> {
    const info = await data.store.info(name);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(`OBJ_${bucket}`, { filter: `$O.${bucket}.C.${info!.nuid}` });
  }

  it("shares one read between concurrent readers of one object", async () => {
    const value = big(5_000);
    await data.putJson("shared", value);
    const reads = await Promise.all(Array.from({ length: 10 }, () => data.getJson<typeof value>("shared")));
    expect(reads[0]).toEqual(value);
    for (const read of reads) expect(read).toBe(reads[0]);
    expect(await data.getJson("missing")).toBeNull();
  });

  it("ends a stalled read with null once the object is deleted under it", async () => {
    await data.putJson("deleted-mid-read", big(2_000));
    await purgeChunks("deleted-mid-read");
    const started = Date.now();
    const read = data.getJson("deleted-mid-read");
    setTimeout(() => void data.delete("deleted-mid-read"), 300);
    expect(await read).toBeNull();
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("gives up on a read that stalls with the object still present: a retryable timeout, not a hang", async () => {
    await data.putJson("stuck", big(2_000));
    await purgeChunks("stuck");
    const error = await data.getJson("stuck").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ category: "timeout", retryable: true });
    // A new attempt starts a new read (the failed one is not cached).
    await data.delete("stuck");
    expect(await data.getJson("stuck")).toBeNull();
  });
});
