import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Objm } from "@nats-io/obj";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateScreeningJobRequest } from "@litrev/contracts";
import { importReferences, toScreeningPaper } from "@litrev/references";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { checkRoundTrip, describeCounts, emptyCounts, FIXTURE_NAMES, FIXTURES } from "../../../../test/support/bibliography-round-trip";
import { ArtifactWriter, artifactJob } from "../artifact";
import { JobData } from "../data";
import { InputTexts } from "../item-texts";
import { listChunks, putListInput, readListChunk } from "../list-input";
import { newJobState } from "../state";
import { toStoredJob, type JsonRecord } from "../store/job-store";
import { exportBody } from "./exports";

/**
 * The library round trip a review team relies on (issue 35), in process on every run: each import
 * fixture imported, its papers validated by the request schema the gateway uses and stored as a
 * job's input, the job's results written into its finished artifact as a worker writes them (each
 * item's title, abstract and bibliographic fields looked up in the input), its RIS export read back
 * by the import and by citation-js. `test/e2e/bibliography-round-trip.test.ts` does the same through
 * a running gateway and a mock screening job.
 */
describe("bibliographic round trip: import → job input → artifact → RIS export → import", { timeout: 120_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let data: JobData;
  const counts = emptyCounts();

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-round-trip-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    data = new JobData(await new Objm(nc).create("litrev_jobdata_round_trip_test"));
  });
  afterAll(async () => {
    console.log(`[bibliography round trip] ${describeCounts(FIXTURE_NAMES.length, counts)}`);
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it.each(FIXTURE_NAMES)("%s: every field and every decision comes back", async (name) => {
    const imported = importReferences([{ name, text: readFileSync(join(FIXTURES, name), "utf8") }]).records;
    const papers = imported.map(toScreeningPaper);
    const request = CreateScreeningJobRequest.parse({ papers, mock: true, repetitions: 1 });
    // The gateway's validation keeps every field the paper came with.
    expect(request.papers).toEqual(papers.map((p) => ({ ...p })));
    const jobId = randomUUID();
    const input = await putListInput(data, `input/${jobId}`, request as unknown as Record<string, unknown>, "papers");

    // Results as a screening job gives them, in the input's order, in chunks.
    const decision = (i: number) => (i % 3 === 0 ? "include" : "exclude");
    const items: JsonRecord[] = papers.map((p, i) => ({ id: p.id, decision: decision(i), final_score: decision(i) === "include" ? 1 : 0, votes: [decision(i)], criteria_verdicts: [], cluster_id: 0, reasoning: "" }));
    const row = { ...toStoredJob(newJobState({ jobId, service: "screening", modelVersion: "mock", config: { papers_count: papers.length, repetitions: 1, threshold: 1, criteria_count: 0 }, estimatedCostUsd: 0 }), { clusters: [] }, 1), status: "completed" as const, progress: 1 };
    const texts = new InputTexts("screening", listChunks(input), (n) => readListChunk(data, input, "papers", n) as Promise<JsonRecord[]>);
    const writer = new ArtifactWriter(data, "screening", jobId, row.fence);
    for (let at = 0; at < items.length; at += 64) {
      const chunk = items.slice(at, at + 64);
      if (writer.push(chunk, await texts.of(chunk))) await writer.flush();
    }
    const head = await writer.finish(row);
    expect(head.bibliography?.lines).toBe(items.length);

    let ris = "";
    for await (const piece of exportBody("screening", artifactJob(data, head), "ris")) ris += piece;
    checkRoundTrip(name, imported, ris, new Map(items.map((item) => [String(item.id), String(item.decision)])), counts);
  });
});
