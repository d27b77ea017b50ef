import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { indexerKind, screeningKind, toIndexerJob, toScreeningJob, type ItemText } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { ArtifactWriter, artifactJob, pollPieces, readArtifactHead } from "./artifact";
import { withTexts } from "./client/exports";
import { FinishedArtifacts } from "./client/finished-artifacts";
import { eraseJobData } from "./erase";
import type { JobMirror } from "./client/mirror";
import type { PartialReader } from "./client/partial-reader";
import { JobReader } from "./client/reader";
import { JobData } from "./data";
import { newJobState } from "./state";
import { MemoryJobStore, toStoredJob, type JsonRecord, type StoredJob } from "./store/job-store";

/** A finished job's artifact against a real nats-server: the poll body's bytes, its items, and the reader's fallback. */
describe("finished job artifacts", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let data: JobData;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-artifact-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    data = new JobData(await new Objm(nc).create("litrev_jobdata_artifact_test"));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const item = (i: number) => ({ id: i % 3 ? `p${i}` : i, final_score: i % 6, cluster_id: 0, reasoning: `Reason ${i}, with "quotes", \u2028 and \n a line break ${"x".repeat(900)}`, decision: i % 2 ? "include" : "exclude", votes: ["include"], criteria_verdicts: [] });
  const clusters = [{ cluster_id: 0, label: 'A "quoted" label', count: 3 }];

  function screeningRow(status: "completed" | "failed", papers: number): StoredJob {
    const state = newJobState({ jobId: randomUUID(), service: "screening", modelVersion: "m", config: { papers_count: papers }, estimatedCostUsd: 0.1 });
    return { ...toStoredJob(state, { clusters }, 1), status, progress: 1, completed_at: new Date().toISOString() };
  }

  async function text(pieces: AsyncIterable<Uint8Array>): Promise<string> {
    const parts: Buffer[] = [];
    for await (const piece of pieces) parts.push(Buffer.from(piece));
    return Buffer.concat(parts).toString("utf8");
  }

  /** A whole artifact of `items`, pushed `size` at a time (with each item's title and abstract, when `texts` gives them). */
  async function writeArtifact(data: JobData, service: "screening" | "indexer", record: StoredJob, items: JsonRecord[], size: number, texts?: (item: JsonRecord, index: number) => ItemText) {
    const writer = new ArtifactWriter(data, service, record.job_id, record.fence);
    for (let at = 0; at < items.length; at += size) {
      const chunk = items.slice(at, at + size);
      if (writer.push(chunk, texts && chunk.map((it, k) => texts(it, at + k)))) await writer.flush();
    }
    return writer.finish(record);
  }

  it("keeps each item's title and abstract beside it, outside the poll body, and erases every object of the job", async () => {
    const items = Array.from({ length: 1_200 }, (_, i) => item(i));
    const row = screeningRow("failed", 1_500);
    const head = await writeArtifact(data, "screening", row, items, 500, (it) => ({ title: `Title of ${String(it.id)}`, abstract: Number(String(it.id).replace("p", "")) % 7 ? "An abstract" : "" }));
    expect(head.titles?.lines).toBe(items.length);
    expect(head.abstracts?.lines).toBe(items.length);
    expect(await text(pollPieces(data, head))).not.toContain("Title of");
    const job = artifactJob(data, head);
    expect(job.partial).toBe(true);
    let n = 0;
    for await (const { items: chunk, titles, abstracts } of withTexts(job, true)) {
      chunk.forEach((it, i) => {
        expect(titles[i]).toBe(`Title of ${String(it.id)}`);
        expect(abstracts![i]).toBe(Number(String(it.id).replace("p", "")) % 7 ? "An abstract" : "");
        n++;
      });
    }
    expect(n).toBe(items.length);
    expect(head.report.prisma).toMatchObject({ records_in: 1_500, results: 1_200, without_abstract: items.filter((_, i) => i % 7 === 0).length });

    // Other jobs' objects stay; every object of this one goes (input, partial chunks of any run, artifact).
    await data.putJson(`input/${row.job_id}`, { papers: [] });
    await data.putLines(`partial/${row.job_id}/3`, {}, [{ id: 1 }]);
    const other = screeningRow("completed", 1);
    await writeArtifact(data, "screening", other, [item(1)], 1);
    const names = async () => (await data.store.list()).filter((e) => !e.deleted).map((e) => e.name);
    expect((await names()).filter((name) => name.includes(row.job_id)).length).toBeGreaterThan(4);
    await eraseJobData(data, row.job_id);
    expect((await names()).filter((name) => name.includes(row.job_id))).toEqual([]);
    expect(await readArtifactHead(data, other.job_id)).not.toBeNull();
  });

  it("keeps the bibliographic fields line for line when some item has them (empty lines for the items before the first), and no list when none has", async () => {
    const items = Array.from({ length: 900 }, (_, i) => item(i));
    const row = screeningRow("completed", 900);
    const bibliography = (i: number) => (i >= 450 && i % 3 === 0 ? { authors: [`Müller, Zoë ${i}`], year: "2019", doi: `10.1000/${i}` } : null);
    const head = await writeArtifact(data, "screening", row, items, 300, (_, i) => ({ title: `T${i}`, abstract: "", bibliography: bibliography(i) }));
    expect(head.bibliography?.lines).toBe(items.length);
    let n = 0;
    for await (const { items: chunk, bibliography: found } of withTexts(artifactJob(data, head))) {
      for (let k = 0; k < chunk.length; k++, n++) expect(found![k]).toEqual(bibliography(n));
    }
    expect(n).toBe(items.length);

    const plain = screeningRow("completed", 2);
    const none = new ArtifactWriter(data, "screening", plain.job_id, plain.fence);
    none.push([item(1), item(2)], [{ title: "a", abstract: "" }, { title: "b", abstract: "", bibliography: null }]);
    const plainHead = await none.finish(plain);
    expect(plainHead.bibliography).toBeUndefined();
    expect(artifactJob(data, plainHead).bibliography).toBeUndefined();
  });

  it("streams the poll body of several chunks, byte for byte the JSON of the whole poll response", async () => {
    const items = Array.from({ length: 2_500 }, (_, i) => item(i));
    const row = screeningRow("completed", items.length);
    await writeArtifact(data, "screening", row, items, 500);
    const head = (await readArtifactHead(data, row.job_id))!;
    expect(head.items.chunks).toBeGreaterThan(1);
    const whole = JSON.stringify(screeningKind.operations.get.response.parse(toScreeningJob(row, { results: items, clusters })));
    expect(await text(pollPieces(data, head))).toBe(whole);
    expect(head.report.outcomes).toEqual({ items: 2_500, by_outcome: { exclude: 1_250, include: 1_250 }, errors: 0 });
    let read = 0;
    for await (const chunk of artifactJob(data, head).chunks()) read += chunk.length;
    expect(read).toBe(items.length);
  });

  it("holds a failed job's finished items; its poll shows what the kind's view shows of them", async () => {
    const items = Array.from({ length: 3 }, (_, i) => item(i));
    const failed = screeningRow("failed", 10);
    await writeArtifact(data, "screening", failed, items, 500);
    const head = (await readArtifactHead(data, failed.job_id))!;
    expect(head.poll.after).toBeNull();
    expect(JSON.parse(await text(pollPieces(data, head)))).toMatchObject({ status: "failed", results: null });
    expect(head.report.outcomes.items).toBe(3);

    const state = newJobState({ jobId: randomUUID(), service: "indexer", modelVersion: "m", config: {}, estimatedCostUsd: 0 });
    const indexerRow: StoredJob = { ...toStoredJob(state, { errors: ["r2: lost"] }, 2), status: "failed", completed_at: new Date().toISOString() };
    const records = [{ ID: "r1", indexing_status: "ok" }];
    await writeArtifact(data, "indexer", indexerRow, records, 500);
    const indexerHead = (await readArtifactHead(data, indexerRow.job_id))!;
    expect(await text(pollPieces(data, indexerHead))).toBe(JSON.stringify(indexerKind.operations.get.response.parse(toIndexerJob(indexerRow, { items: records, errors: ["r2: lost"] }))));
  });

  it("a job failed as an orphan (it stored no items) gets an empty artifact at its first read; a finished row whose artifact is gone is not found", async () => {
    const store = new MemoryJobStore();
    const orphan = { ...screeningRow("failed", 7), owner: "alice", error_category: "orphan_cleanup" };
    await store.upsertJob(orphan);
    const reader = new JobReader("screening", { read: async () => null } as unknown as JobMirror, data, {} as PartialReader, store);
    await expect(reader.get(orphan.job_id, "bob")).rejects.toMatchObject({ category: "not_found" });
    expect(await reader.get(orphan.job_id, "alice")).toMatchObject({ status: "failed", results: null });
    expect((await readArtifactHead(data, orphan.job_id))?.owner).toBe("alice");
    await expect(reader.ensureArtifact(randomUUID(), "alice")).rejects.toMatchObject({ category: "not_found" });

    // Its items lived only in the artifact: no empty one stands in for them.
    const gone = { ...screeningRow("completed", 7), owner: "alice" };
    await store.upsertJob(gone);
    await expect(reader.get(gone.job_id, "alice")).rejects.toMatchObject({ category: "not_found" });
    await expect(reader.finished(gone.job_id, "alice")).rejects.toMatchObject({ category: "not_found" });
    expect(await readArtifactHead(data, gone.job_id)).toBeNull();
  });
  it("reads a finished job's lists once for every export of it, and again once the job is forgotten (deleted)", async () => {
    const items = Array.from({ length: 700 }, (_, i) => item(i));
    const row = screeningRow("completed", 700);
    const head = await writeArtifact(data, "screening", row, items, 300, (it) => ({ title: `Title of ${String(it.id)}`, abstract: "An abstract" }));
    const artifacts = new FinishedArtifacts();
    const artifact = (await artifacts.fetch("screening", row.job_id, data))!;
    const reads = vi.spyOn(data, "readChunkParts");
    const exported = async () => {
      const lines: string[] = [];
      for await (const { items: chunk, titles, abstracts } of withTexts(artifacts.job("screening", artifact, data), true)) chunk.forEach((it, i) => lines.push(`${String(it.id)} ${titles[i]} ${abstracts![i]}`));
      return lines;
    };
    const direct: string[] = [];
    for await (const { items: chunk, titles, abstracts } of withTexts(artifactJob(data, head), true)) chunk.forEach((it, i) => direct.push(`${String(it.id)} ${titles[i]} ${abstracts![i]}`));
    reads.mockClear();

    // Items, titles and abstracts: each chunk read from NATS by the first export only, the same lines every time.
    const chunks = (head.items.chunks ?? 0) + (head.titles?.chunks ?? 0) + (head.abstracts?.chunks ?? 0);
    expect(await exported()).toEqual(direct);
    expect(reads).toHaveBeenCalledTimes(chunks);
    expect(await Promise.all([exported(), exported()])).toEqual([direct, direct]);
    expect(reads).toHaveBeenCalledTimes(chunks);
    // Deleted: nothing of it is answered from memory any more.
    artifacts.forget("screening", row.job_id);
    await exported();
    expect(reads).toHaveBeenCalledTimes(2 * chunks);
    reads.mockRestore();
  });
});
