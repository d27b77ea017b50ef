import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "../../../scripts/lib/launch";
import { keepStreamLimits, storageQuotas } from "./quotas";

const MiB = 1024 * 1024;

describe("storage quotas", () => {
  it("default to limits whose sum fits the 20 GB store of the compose and Kubernetes setups", () => {
    const q = storageQuotas({});
    const perJobService = q.jobCommandsBytes + q.checkpointsBytes + q.jobStateBytes + q.jobDataBytes + q.jobStagingBytes + q.storeRowsBytes + q.storeIndexBytes + q.storeItemsBytes;
    const total = q.configBytes + 3 * q.payloadBytes + 2 * perJobService;
    expect(total).toBeLessThan(20 * 1000 ** 3 * 0.9);
    for (const [name, value] of Object.entries(q)) expect(value, name).toBeGreaterThan(0);
  });

  it("are read from NATS_QUOTA_*_MB; an invalid value falls back to the defaults", () => {
    expect(storageQuotas({ NATS_QUOTA_PAYLOAD_MB: "64" }).payloadBytes).toBe(64 * MiB);
    expect(storageQuotas({ NATS_QUOTA_PAYLOAD_MB: "-1" }).payloadBytes).toBe(storageQuotas({}).payloadBytes);
  });

  describe("keepStreamLimits", () => {
    let dir: string;
    let server: NatsServerHandle;
    let nc: NatsConnection;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "litrev-quota-"));
      server = await startNatsServer({ storeDir: dir });
      nc = await connect({ servers: server.url });
    }, 30_000);
    afterAll(async () => {
      await nc?.close();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("puts a limit on a stream created without one, and leaves a current stream alone", async () => {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "OLD", subjects: ["old.>"] });
      expect((await jsm.streams.info("OLD")).config.max_bytes).toBe(-1);
      await keepStreamLimits(jsm, "OLD", { max_bytes: 8 * MiB, max_msgs_per_subject: 1 });
      const after = (await jsm.streams.info("OLD")).config;
      expect(after.max_bytes).toBe(8 * MiB);
      expect(after.max_msgs_per_subject).toBe(1);
      expect(after.subjects).toEqual(["old.>"]);
      await keepStreamLimits(jsm, "OLD", { max_bytes: 8 * MiB });
      expect((await jsm.streams.info("OLD")).config.max_bytes).toBe(8 * MiB);
    });
  });
});
