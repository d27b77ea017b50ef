import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { toScreeningJob } from "@litrev/contracts";
import { StreamedBody } from "@litrev/messaging";
import { newJobState } from "../state";
import { MemoryJobStore, toStoredJob } from "../store/job-store";
import type { JobData } from "../data";
import type { JobMirror } from "./mirror";
import type { PartialReader } from "./partial-reader";
import { JobReader } from "./reader";

/** A reader of terminal jobs only: nothing live, everything from the store of record. */
function readerOver(store: MemoryJobStore): JobReader {
  const mirror = { read: async () => null } as unknown as JobMirror;
  return new JobReader("screening", mirror, {} as JobData, {} as PartialReader, store);
}

async function completedJob(store: MemoryJobStore, items: Record<string, unknown>[], chunk: number) {
  const state = newJobState({ jobId: randomUUID(), service: "screening", modelVersion: "m", config: { papers_count: items.length }, estimatedCostUsd: 0.1 });
  const row = { ...toStoredJob(state, { clusters: [{ cluster_id: 0, label: "A \u2028 \"quoted\"", count: items.length }] }, 1), status: "completed" as const, progress: 1 };
  await store.upsertJob(row);
  for (let n = 0; n * chunk < items.length; n++) await store.putItems(row.job_id, 1, n, items.slice(n * chunk, (n + 1) * chunk));
  return row;
}

const item = (i: number) => ({ id: i % 3 ? `p${i}` : i, final_score: i % 6, cluster_id: 0, reasoning: `Reason ${i}, with "quotes" and \n a line break`, votes: ["include"] });

describe("JobReader: finished jobs' poll bodies", () => {
  it("streams a body of several stored chunks, byte for byte the JSON of the whole view", async () => {
    const store = new MemoryJobStore();
    const items = Array.from({ length: 1_234 }, (_, i) => item(i));
    const row = await completedJob(store, items, 500);
    const body = await readerOver(store).get(row.job_id);
    expect(body).toBeInstanceOf(StreamedBody);
    const text = await (body as StreamedBody).text();
    expect(text).toBe(JSON.stringify(toScreeningJob(row, { results: items, clusters: row.result!.clusters as unknown[] })));
  });

  it("answers a job of one chunk (or none) as a plain value", async () => {
    const store = new MemoryJobStore();
    const small = await completedJob(store, Array.from({ length: 3 }, (_, i) => item(i)), 500);
    expect(await readerOver(store).get(small.job_id)).toMatchObject({ status: "completed", results: [{ id: 0 }, { id: "p1" }, { id: "p2" }] });
    const empty = await completedJob(store, [], 500);
    expect(await readerOver(store).get(empty.job_id)).toMatchObject({ status: "completed", results: [] });
  });
});
