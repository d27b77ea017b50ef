import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobNames, MAX_VALIDATION_SAMPLE } from "@litrev/contracts";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { RecallCertificates } from "./recall-certificates";

const JOB = "8c1e2f34-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const SAMPLE = "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9";

/** The part of a stored sample an export reads (the service stores more beside it). */
const stored = (owner: string | null, jobId: string, paperIds: (string | number)[], labels: { id: string | number; included: boolean }[]) => ({
  owner,
  scores: paperIds.map(() => 1),
  sample: { sample_id: SAMPLE, job_id: jobId, paper_ids: paperIds, labels },
});

describe("a validation sample as a gateway reads it for an export (real nats-server)", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-sample-marks-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it("reads the owner's sample of the job once as marks; another owner's, another job's, an unknown, an oversized one or no bucket yet: null", async () => {
    const reader = new RecallCertificates(() => nc);
    // No sample drawn anywhere yet: the bucket does not exist.
    expect(await reader.sampleMarks("screening", JOB, SAMPLE, "alice")).toBeNull();

    const kv = await new Kvm(nc).create(jobNames("screening").validationBucket, { history: 1 });
    const key = jobNames("screening").validationKey(JOB, SAMPLE);
    await kv.put(key, JSON.stringify(stored("alice", JOB, ["a", 7, "c"], [{ id: "7", included: true }, { id: "a", included: false }])));
    const marks = await reader.sampleMarks("screening", JOB, SAMPLE, "alice");
    expect(marks?.sampleId).toBe(SAMPLE);
    expect([...marks!.labels]).toEqual([
      ["a", false],
      ["7", true],
      ["c", null],
    ]);

    expect(await reader.sampleMarks("screening", JOB, SAMPLE, "bob")).toBeNull();
    expect(await reader.sampleMarks("screening", JOB, "00000000-0000-4000-8000-000000000000", "alice")).toBeNull();
    // A record under this job's key that names another job is not this job's sample.
    await kv.put(key, JSON.stringify(stored("alice", "another-job", ["a"], [])));
    expect(await reader.sampleMarks("screening", JOB, SAMPLE, "alice")).toBeNull();
    // More papers than a sample may hold: not read into memory as marks.
    const many = Array.from({ length: MAX_VALIDATION_SAMPLE + 1 }, (_, i) => i);
    await kv.put(key, JSON.stringify(stored("alice", JOB, many, [])));
    expect(await reader.sampleMarks("screening", JOB, SAMPLE, "alice")).toBeNull();
    // The indexer keeps no samples: no bucket, null.
    expect(await reader.sampleMarks("indexer", JOB, SAMPLE, "alice")).toBeNull();
  });
});
