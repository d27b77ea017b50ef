import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalRecords } from "@litrev/messaging";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { openJobInfra, type JobInfra } from "../infra";
import { newJobState } from "../state";
import { MemoryJobStore } from "../store/job-store";
import { admitJob } from "./admission";
import { OwnerStorage } from "./owner-storage";

const logger = createLogger("admission-storage-test", "silent");

/** Admission against the owner's storage quota, on a real nats-server: reserved before anything is stored, given back when the job is refused. */
describe("admission with per-owner storage quotas", { timeout: 60_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let infra: JobInfra;
  let quota: OwnerStorage;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-admission-storage-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    infra = await openJobInfra(nc, "indexer");
    quota = new OwnerStorage(new LocalRecords(), "indexer", { bytes: 10_000, liveJobs: 2, keptForMs: 60_000 }, async (id) => ((await infra.registry.get(id)) ? "active" : "none"));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const state = (owner: string, jobId = randomUUID()) => newJobState({ jobId, service: "indexer", projectId: null, owner, modelVersion: "m", config: {}, estimatedCostUsd: null });
  const admit = (owner: string, resultBytes: number, jobId?: string) =>
    admitJob(infra, new MemoryJobStore(), { state: state(owner, jobId), input: { records: ["r"] }, storage: { quota, resultBytes }, logger });

  it("refuses the job that would cross the owner's quota before storing it, and gives back a refused admission's reservation", async () => {
    expect((await admit("alice", 6_000)).ok).toBe(true);
    await expect(admit("alice", 6_000)).rejects.toMatchObject({ category: "rate_limit", message: expect.stringMatching(/OWNER_STORAGE_MB/) });
    await expect(admit("alice", 20_000)).rejects.toMatchObject({ category: "too_large" });
    // Another owner is untouched.
    expect((await admit("bob", 6_000)).ok).toBe(true);

    // An admission that fails after its reservation (its job id taken: the live state cannot be created) holds nothing afterwards.
    const taken = randomUUID();
    expect((await admit("carol", 1_000, taken)).ok).toBe(true);
    await expect(admit("carol", 8_000, taken)).rejects.toThrow();
    expect((await admit("carol", 8_000)).ok).toBe(true);
  });
});
