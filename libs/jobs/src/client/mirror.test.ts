import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { waitFor } from "../../../../test/support/stack";
import { openJobInfra, type JobInfra } from "../infra";
import { newJobState } from "../state";
import { JobMirror, type MirrorEntry } from "./mirror";

const logger = createLogger("mirror-test", process.env.TEST_LOG_LEVEL ?? "silent");

describe("JobMirror (real nats-server)", { timeout: 30_000 }, () => {
  let server: NatsServerHandle;
  let storeDir: string;
  let nc: NatsConnection;
  let infra: JobInfra;
  let mirror: JobMirror;

  beforeAll(async () => {
    storeDir = mkdtempSync(join(tmpdir(), "litrev-mirror-test-"));
    server = await startNatsServer({ storeDir });
    nc = await connect({ servers: server.url });
    infra = await openJobInfra(nc, "indexer");
    mirror = await JobMirror.open(nc, "indexer", logger);
  });
  afterAll(async () => {
    mirror?.stop();
    await nc?.close();
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });

  const fresh = () => newJobState({ jobId: randomUUID(), service: "indexer", modelVersion: "m", config: {}, estimatedCostUsd: null });

  it("tells every listener of a job each newer revision once, then its removal, and nothing after they stop", async () => {
    const state = fresh();
    const a: (MirrorEntry | null)[] = [];
    const b: (MirrorEntry | null)[] = [];
    const other: (MirrorEntry | null)[] = [];
    const stopA = mirror.listen(state.job_id, (e) => a.push(e));
    const stopB = mirror.listen(state.job_id, (e) => b.push(e));
    mirror.listen(randomUUID(), (e) => other.push(e));

    await infra.registry.create(state);
    await infra.registry.update(state.job_id, (s) => ({ ...s, status: "running", progress: 0.5 }));
    await waitFor(() => a.some((e) => e?.state.progress === 0.5));
    // A direct read of a revision the watch already delivered is not news.
    await mirror.read(state.job_id);
    await infra.registry.remove(state.job_id);
    await waitFor(() => a.at(-1) === null);

    expect(a.map((e) => e?.state.status ?? null)).toEqual(["pending", "running", null]);
    const revisions = a.flatMap((e) => (e ? [e.revision] : []));
    expect(revisions[1]!).toBeGreaterThan(revisions[0]!);
    expect(b.map((e) => e?.revision ?? null)).toEqual(a.map((e) => e?.revision ?? null));
    expect(other).toEqual([]);

    stopA();
    stopB();
    const again = fresh();
    const late: (MirrorEntry | null)[] = [];
    mirror.listen(again.job_id, (e) => late.push(e));
    await infra.registry.create({ ...again });
    await waitFor(() => late.length > 0);
    expect(a).toHaveLength(3);
  });

  it("tells onEnded of each job it held as active once it ends or is removed, and of no other change", async () => {
    const ended: string[] = [];
    mirror.onEnded = (state) => ended.push(`${state.job_id} ${state.status}`);
    try {
      const [done, removed, untouched] = [fresh(), fresh(), fresh()];
      for (const state of [done, removed, untouched]) await infra.registry.create(state);
      await infra.registry.update(done.job_id, (s) => ({ ...s, status: "running" }));
      await waitFor(() => mirror.get(done.job_id)?.state.status === "running");
      await infra.registry.update(done.job_id, (s) => ({ ...s, status: "completed" }));
      await infra.registry.update(done.job_id, (s) => ({ ...s, progress: 1 })); // still ended: not news
      await infra.registry.remove(done.job_id); // removed once ended: not news either
      await waitFor(() => mirror.get(removed.job_id) !== undefined);
      await infra.registry.remove(removed.job_id);
      await waitFor(() => ended.length >= 2);
      await infra.registry.update(untouched.job_id, (s) => ({ ...s, progress: 0.5 }));
      await waitFor(() => mirror.get(untouched.job_id)?.state.progress === 0.5);
      expect(ended).toEqual([`${done.job_id} completed`, `${removed.job_id} pending`]);
    } finally {
      mirror.onEnded = undefined;
    }
  });

  it("keeps delivering to the others when one listener throws", async () => {
    const state = fresh();
    const seen: (MirrorEntry | null)[] = [];
    mirror.listen(state.job_id, () => {
      throw new Error("a broken listener");
    });
    mirror.listen(state.job_id, (e) => seen.push(e));
    await infra.registry.create(state);
    await waitFor(() => seen.length === 1);
  });
});
