import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { createLogger } from "@litrev/telemetry";
import { startNatsServer, type NatsServerHandle } from "../../../../scripts/lib/launch";
import { EmbeddedJobStore } from "./embedded-job-store";
import { jobStoreContract, storedJob, type ContractSubject } from "./job-store.contract";
import { MemoryJobStore, NoJobStore, type JobStore } from "./job-store";
import { connectFailure, databaseOf, MongoJobStore } from "./mongo-job-store";
import { openJobStore } from "./open-job-store";

const logger = createLogger("job-store-test", process.env.TEST_LOG_LEVEL ?? "silent");

const memory: Record<string, MemoryJobStore> = { screening: new MemoryJobStore(), indexer: new MemoryJobStore() };
jobStoreContract("memory", { open: async (service = "screening") => (memory[service] ??= new MemoryJobStore()) });

/** The embedded store on a real nats-server; each `open()` is a new connection, as a restarted process would have. */
function embedded(): ContractSubject {
  const storeDir = mkdtempSync(join(tmpdir(), "litrev-store-contract-"));
  let server: NatsServerHandle | undefined;
  const connections: NatsConnection[] = [];
  return {
    async open(service = "screening"): Promise<JobStore> {
      server ??= await startNatsServer({ storeDir });
      const nc = await connect({ servers: server.url });
      connections.push(nc);
      return EmbeddedJobStore.open(nc, service);
    },
    async cleanUp() {
      await Promise.all(connections.map((nc) => nc.close().catch(() => undefined)));
      await server?.stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
jobStoreContract("embedded (JetStream)", embedded);

const mongoUrl = process.env.MONGO_URL;
if (!mongoUrl) console.log("[job-store.test] skipping the MongoDB store contract: MONGO_URL is not set (no MongoDB server on this machine)");
const database = `litrev_test_${process.pid}`;
jobStoreContract(
  "mongodb",
  {
    // One pair of collections per kind, as the services are configured.
    open: (service = "screening") => MongoJobStore.connect({ url: mongoUrl!, database, jobs: `${service}_jobs`, items: `${service}_items` }),
  },
  mongoUrl ? {} : { skip: "set MONGO_URL to run it against MongoDB" },
);

describe("without persistence", () => {
  it("keeps nothing and says why in readiness", async () => {
    const none = new NoJobStore();
    expect(await none.upsertJob(storedJob({ projectId: 1 }))).toBe("written");
    expect(await none.listJobs(10)).toEqual([]);
    expect(none.persistent).toBe(false);
    expect(none.describe()).toBe("none");
    expect(none.status()).toMatch(/^error: .*persistence/);
  });

  it("continues without persistence, with one warning, when MongoDB is unreachable", async () => {
    const started = Date.now();
    const nc = {} as NatsConnection; // not used on the MongoDB path
    const store = await openJobStore({ url: "mongodb://127.0.0.1:1/litrev", nc, service: "screening", jobs: "j", items: "i", logger, serverSelectionTimeoutMS: 500 });
    expect(store.kind).toBe("none");
    expect(store.status()).toMatch(/^error: database initialisation failed at start-up \(MongoDB is unreachable\)/);
    expect(store.status()).not.toContain("127.0.0.1");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("uses the database the URL names, else litrev (never the driver's `test`)", () => {
    expect(databaseOf("mongodb://127.0.0.1:27017")).toBe("litrev");
    expect(databaseOf("mongodb://127.0.0.1:27017/")).toBe("litrev");
    expect(databaseOf("mongodb://u:p%2Fq@a:1,b:2/?replicaSet=rs")).toBe("litrev");
    expect(databaseOf("mongodb://u:p@a:1,b:2/reviews?replicaSet=rs")).toBe("reviews");
    expect(databaseOf("mongodb+srv://cluster.example.net/my%20db")).toBe("my db");
  });

  it("names a start-up failure for what it is: only an unreachable server is 'unreachable'", () => {
    const error = (name: string, codeName?: string) => Object.assign(new Error("mongodb://user:secret@host"), { name, codeName });
    expect(connectFailure(error("MongoServerSelectionError"))).toBe("MongoDB is unreachable");
    expect(connectFailure(error("MongoServerError", "AuthenticationFailed"))).toMatch(/refused the credentials/);
    expect(connectFailure(error("MongoServerError", "IndexOptionsConflict"))).toBe("MongoDB refused the job store's set-up (IndexOptionsConflict)");
    expect(connectFailure(error("MongoParseError"))).toMatch(/not a valid MongoDB connection string/);
    for (const name of ["MongoServerError", "TypeError"]) expect(connectFailure(error(name))).not.toMatch(/unreachable|secret/);
  });
});
