import type { ObjectStore } from "@nats-io/obj";
import { describe, expect, it } from "vitest";
import { StreamedBody } from "@litrev/messaging";
import { JobData } from "../data";
import { FinishedBodies, finishedParts, finishedWhileRead, readFinishedBody, writeFinishedBody } from "./finished-bodies";

/** An object store in memory (what JobData uses of one), counting reads; `failWrites` makes part writes fail. */
class MemoryObjects {
  readonly blobs = new Map<string, Uint8Array>();
  reads = 0;
  failWrites = false;

  async putBlob(meta: { name: string }, bytes: Uint8Array): Promise<void> {
    if (this.failWrites && !meta.name.endsWith("/head")) throw new Error("bucket full");
    this.blobs.set(meta.name, bytes);
  }

  async get(name: string) {
    this.reads++;
    const bytes = this.blobs.get(name);
    if (!bytes) return null;
    return {
      data: new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      }),
      error: Promise.resolve(null),
    };
  }

  async info(name: string) {
    return this.blobs.has(name) ? { deleted: false } : null;
  }
}

const JOB = "3f0c4a52-6d4e-4b7a-9c39-0d1f2e3a4b5c";
const head = { owner: "alice", status: "completed" as const };

function setUp() {
  const objects = new MemoryObjects();
  return { objects, data: new JobData(objects as unknown as ObjectStore) };
}

async function text(data: JobData): Promise<string> {
  const found = await readFinishedBody(data, JOB);
  if (!found) throw new Error("no finished body");
  const parts: Buffer[] = [];
  for await (const part of finishedParts(data, found)) parts.push(Buffer.from(part));
  return Buffer.concat(parts).toString("utf8");
}

describe("finished bodies", () => {
  it("writes a value once as its exact JSON and reads it back whole (one part)", async () => {
    const { data } = setUp();
    const body = { job_id: JOB, status: "completed", results: [{ id: "p1", reasoning: "naïve – “quoted”" }] };
    const written = await writeFinishedBody(data, JOB, head, body);
    expect(written).toMatchObject({ version: 1, owner: "alice", status: "completed", parts: 1 });
    const found = await readFinishedBody(data, JOB);
    expect(Buffer.from(found!.body!).toString("utf8")).toBe(JSON.stringify(body));
  });

  it("writes a streamed body in parts while it is read, head before the last piece, byte for byte", async () => {
    const { data, objects } = setUp();
    const pieces = ['{"results":[', ...Array.from({ length: 3_000 }, (_, i) => `${i ? "," : ""}{"id":"p${i}","reasoning":"${"é".repeat(400)}"}`), "]}"];
    let headBeforeLast = false;
    const streamed = finishedWhileRead(data, JOB, head, new StreamedBody(async function* () {
      yield* pieces;
    }));
    const seen: string[] = [];
    for await (const piece of streamed.pieces()) {
      if (seen.length === pieces.length - 1) headBeforeLast = objects.blobs.has(`finished/${JOB}/head`);
      seen.push(piece);
    }
    expect(seen.join("")).toBe(pieces.join(""));
    expect(headBeforeLast).toBe(true);
    expect((await readFinishedBody(data, JOB))!.parts).toBeGreaterThan(1);
    expect(await text(data)).toBe(pieces.join(""));
  });

  it("still hands on every piece when the write fails, and leaves no head", async () => {
    const { data, objects } = setUp();
    objects.failWrites = true;
    const pieces = ["[", '"a"', ",", '"b"', "]"];
    const streamed = finishedWhileRead(data, JOB, head, new StreamedBody(async function* () {
      yield* pieces;
    }));
    expect(await streamed.text()).toBe(pieces.join(""));
    expect(await readFinishedBody(data, JOB)).toBeNull();
  });

  it("caches a body once read, shares one read between concurrent misses, and does not remember a missing one", async () => {
    const { data, objects } = setUp();
    const bodies = new FinishedBodies();
    expect(await bodies.fetch("screening", JOB, data)).toBeNull();
    expect(bodies.peek("screening", JOB)).toBeUndefined();
    await writeFinishedBody(data, JOB, head, { job_id: JOB });
    const before = objects.reads;
    const [a, b] = await Promise.all([bodies.fetch("screening", JOB, data), bodies.fetch("screening", JOB, data)]);
    expect(a).toBe(b);
    expect(objects.reads - before).toBe(2); // the head and the one part, once
    expect(bodies.peek("screening", JOB)).toBe(a);
    expect(bodies.peek("indexer", JOB)).toBeUndefined();
  });

  it("stays within its byte budget", async () => {
    const { data } = setUp();
    const bodies = new FinishedBodies(64 * 1024);
    const ids = Array.from({ length: 20 }, (_, i) => `3f0c4a52-6d4e-4b7a-9c39-${String(i).padStart(12, "0")}`);
    for (const id of ids) {
      await writeFinishedBody(data, id, head, { job_id: id, pad: "x".repeat(8_000) });
      await bodies.fetch("screening", id, data);
    }
    expect(bodies.size).toBeLessThanOrEqual(64 * 1024);
    expect(bodies.peek("screening", ids[0]!)).toBeUndefined();
    expect(bodies.peek("screening", ids.at(-1)!)).toBeDefined();
  });
});
