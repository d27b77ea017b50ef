import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceError } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { JobData, JsonLines } from "./data";
import { listChunks, putListInput, readListChunk, readListHead, readWholeInput, stagedList } from "./list-input";

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

  it("starts a read again on a new consumer when the first stops delivering (a cluster server lost its stream)", async () => {
    const value = big(500);
    await data.putJson("silent-consumer", value);
    // The first consumer delivers nothing, ever; the object itself is intact.
    let gets = 0;
    const store = Object.create(data.store) as typeof data.store;
    store.get = async (name: string) => {
      if (gets++ > 0) return data.store.get(name);
      const real = await data.store.get(name);
      void real?.data.cancel();
      return real && { ...real, data: new ReadableStream<Uint8Array>({ pull: () => new Promise<void>(() => undefined) }), error: new Promise<Error | null>(() => undefined) };
    };
    const reader = new JobData(store, { stallCheckMs: 200, readBudgetMs: 5_000 });
    expect(await reader.getJson("silent-consumer")).toEqual(value);
    expect(gets).toBe(2);
  });

  it("writes a list as chunked JSON Lines and reads it back one chunk at a time, in order", async () => {
    const papers = Array.from({ length: 6_000 }, (_, i) => ({ id: i % 2 ? i : `p${i}`, title: `Paper ${i}\nwith a line break`, abstract: "é ".repeat(150) }));
    const ref = await putListInput(data, "input/list-test", { papers, criteria: [{ name: "c" }], questions: [] }, "papers");
    expect(ref).toMatchObject({ object: "input/list-test", lines: 6_000 });
    expect(ref.chunks).toBeGreaterThan(1); // ~2 MB of text in ~1 MB chunks
    expect(await readListHead(data, ref, "papers")).toEqual({ head: { criteria: [{ name: "c" }], questions: [] }, count: 6_000 });
    const sizes: number[] = [];
    const back: unknown[] = [];
    for (let n = 0; n < listChunks(ref); n++) {
      const chunk = await readListChunk(data, ref, "papers", n);
      sizes.push(chunk.length);
      back.push(...chunk);
    }
    expect(back).toEqual(papers);
    expect(Math.max(...sizes)).toBeLessThan(6_000);
    expect(await readWholeInput(data, ref)).toEqual({ criteria: [{ name: "c" }], questions: [], papers });

    // An input stored whole (before lists were chunked) reads the same way.
    const whole = await data.putJson("input/whole-test", { papers: papers.slice(0, 3), criteria: [] });
    expect(await readListHead(data, whole, "papers")).toEqual({ head: { criteria: [] }, count: 3 });
    expect(await readListChunk(data, whole, "papers", 0)).toEqual(papers.slice(0, 3));

    // Removed: every chunk goes, and a read says so rather than ending short.
    await data.deleteLines(ref);
    await expect(readListChunk(data, ref, "papers", 0)).rejects.toMatchObject({ category: "unknown" });
    expect(await data.readHead(ref)).toBeNull();
  });

  it("accepts only well-formed staged references within the list's bounds", () => {
    const ref = { object: "staged/0b5f4c1e-2a43-4c4e-9a55-3c2f0a1b2c3d", bytes: 10, lines: 3, chunks: 1 };
    expect(stagedList(undefined, 10)).toBeNull();
    expect(stagedList(JSON.stringify(ref), 10)).toEqual(ref);
    for (const bad of [{ ...ref, object: "input/x" }, { ...ref, object: "staged/../result" }, { ...ref, lines: 0 }, { ...ref, lines: 11 }, { ...ref, chunks: undefined }]) {
      expect(() => stagedList(JSON.stringify(bad), 10)).toThrow(ServiceError);
    }
    expect(() => stagedList("not json", 10)).toThrow(ServiceError);
  });

  it("keeps staged lists in the staging store (the one the gateway may write)", async () => {
    const objm = new Objm(nc);
    const withStaging = new JobData(await objm.create(bucket), {}, await objm.create("litrev_staging_test"));
    const ref = await withStaging.putLines("staged/new", {}, [{ id: "a" }, { id: "b" }]);
    await withStaging.putHead(ref, { list: "papers", head: { criteria: [] } });
    expect(await withStaging.staging.info("staged/new/0")).not.toBeNull();
    expect(await withStaging.staging.info("staged/new/head")).not.toBeNull();
    expect(await withStaging.store.info("staged/new/0")).toBeNull();
    expect(await withStaging.readChunk(ref, 0)).toEqual([{ id: "a" }, { id: "b" }]);
    expect(await withStaging.readHead(ref)).toEqual({ list: "papers", head: { criteria: [] } });
    // Other names stay in the data store.
    await withStaging.putJson("input/x", { n: 1 });
    expect(await withStaging.store.info("input/x")).not.toBeNull();
    expect(await withStaging.staging.info("input/x")).toBeNull();

    await withStaging.deleteLines(ref);
    expect((await withStaging.staging.info("staged/new/0"))?.deleted ?? true).toBe(true);
  });

  it("refuses a staged list whose head or chunk was replaced after admission sealed it", async () => {
    const objm = new Objm(nc);
    const staging = await objm.create("litrev_staging_seal_test");
    const withStaging = new JobData(await objm.create(bucket), {}, staging);
    const staged = await withStaging.putLines("staged/sealed", {}, [{ id: "a" }, { id: "b" }]);
    await withStaging.putHead(staged, { list: "papers", head: { criteria: ["c"] } });
    const sealed = await withStaging.seal(staged);
    expect(sealed.digests).toHaveLength(2); // head + one chunk
    expect(await withStaging.readChunk(sealed, 0)).toEqual([{ id: "a" }, { id: "b" }]);
    expect(await withStaging.readHead(sealed)).toEqual({ list: "papers", head: { criteria: ["c"] } });

    // Whoever may write the staging store (the gateway) replaces the chunk and the head after admission.
    await staging.putBlob({ name: "staged/sealed/0" }, new TextEncoder().encode(`${JSON.stringify({ id: "forged" })}\n`));
    await staging.putBlob({ name: "staged/sealed/head" }, new TextEncoder().encode(JSON.stringify({ list: "papers", head: { criteria: ["forged"] } })));
    await expect(withStaging.readChunk(sealed, 0)).rejects.toThrow(/changed after/);
    await expect(withStaging.readHead(sealed)).rejects.toThrow(/changed after/);
    // A list missing a part cannot be sealed.
    await expect(withStaging.seal({ ...staged, object: "staged/absent" })).rejects.toThrow(ServiceError);
  });
});

describe("JsonLines", () => {
  it("parses a chunk delivered in pieces the same as in one buffer, lines and characters split anywhere", () => {
    const values = [{ id: "p1", title: "Zoë ≥ α 🙂" }, "a line", 3, { nested: ["x\ny"] }];
    const bytes = Buffer.from(values.map((v) => `${JSON.stringify(v)}\n`).join(""));
    expect(JsonLines.parse(bytes)).toEqual(values);
    for (let size = 1; size < 12; size++) {
      const parts: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
      expect(JsonLines.parse(parts)).toEqual(values);
    }
    // No final newline, and an empty piece.
    expect(JsonLines.parse([Buffer.from('"a"\n"b'), Buffer.alloc(0), Buffer.from('c"')])).toEqual(["a", "bc"]);
  });

  it("turns a chunk into the inside of a JSON array in the pieces it came in, whatever the split", () => {
    const values = [{ id: "p1", title: "Zoë ≥ α" }, "a line", 3, { nested: ["x\ny"] }];
    const text = values.map((v) => `${JSON.stringify(v)}\n`).join("");
    for (let size = 1; size <= text.length; size++) {
      const bytes = Buffer.from(text);
      const parts: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) parts.push(bytes.subarray(at, at + size));
      const pieces = JsonLines.asArrayItems(parts);
      expect(JSON.parse(`[${Buffer.concat(pieces).toString("utf8")}]`)).toEqual(values);
      expect(pieces.every((piece) => piece.length > 0)).toBe(true);
    }
    expect(JsonLines.asArrayItems([])).toEqual([]);
  });
});
