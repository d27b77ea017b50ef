import { once } from "node:events";
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import type { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { screeningPapers } from "../e2e/screening-fixtures";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { jobInfraFor, terminalState } from "./support";

/**
 * MongoDB stopped mid-run and back again (Build 6): jobs keep running on their live state while the
 * database is away, and once it is back nothing is missing from it. The suite does not own the
 * server at MONGO_URL, so it puts a TCP relay in front of it and takes that away (every connection
 * cut, new ones refused) and brings it back on the same port.
 */

const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

/** The relay's URL for MONGO_URL, or why this server cannot be relayed. */
function relayable(url: string | undefined): { target: URL } | { skip: string } {
  if (!url) return { skip: "needs a MongoDB server (set MONGO_URL)" };
  if (!url.startsWith("mongodb://") || url.slice(10).split("/")[0]!.includes(",")) return { skip: "needs a single-host mongodb:// MONGO_URL (the suite relays one host)" };
  const target = new URL(url);
  if (/^(true|1)$/i.test(target.searchParams.get("tls") ?? target.searchParams.get("ssl") ?? "")) return { skip: "needs a MONGO_URL without TLS (the relay changes the host name)" };
  return { target };
}

class TcpRelay {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly host: string, private readonly targetPort: number) {}

  async open(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => (client.destroy(), upstream.destroy()));
      }
      client.pipe(upstream).pipe(client);
    });
    server.listen(this.port, "127.0.0.1");
    await once(server, "listening");
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** The database "stops": every connection is cut and new ones are refused. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const s of this.#sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const plan = relayable(process.env.MONGO_URL);
if ("skip" in plan) console.log(`[resilience/mongo-outage] MongoDB stopped mid-run: skipped, ${plan.skip}`);

describe.skipIf("skip" in plan)("MongoDB stopped mid-run and back: nothing lost", () => {
  let relay: TcpRelay;
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;
  let indexerInfra: JobInfra;

  beforeAll(async () => {
    const { target } = plan as { target: URL };
    relay = new TcpRelay(target.hostname, Number(target.port || 27017));
    await relay.open();
    const relayed = new URL(target.toString());
    relayed.host = `127.0.0.1:${relay.port}`;
    relayed.pathname = `/litrev_resilience_${process.pid}`;
    relayed.searchParams.set("directConnection", "true");
    if (target.username && !target.searchParams.has("authSource")) relayed.searchParams.set("authSource", target.pathname.slice(1) || "admin");
    provider = await startFakeProvider({ latencyMs: 20, respond: extractionResponder() });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: { MONGO_URL: relayed.toString(), OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url },
    });
    ({ link, infra } = await jobInfraFor(stack, "screening", "resilience-mongo-outage"));
    indexerInfra = await openJobInfra(await link.ready(), "indexer");
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
    await relay?.cut();
  });

  const ready = () => stack.http("GET", "/health/ready", undefined, { auth: false });

  it("jobs run through the outage; afterwards every job and every result is in the database", async () => {
    await waitFor(async () => (await ready()).body?.checks?.database === "ok", 15_000, 200);

    await relay.cut();
    const screening = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(30), mock: true, project_id: 9201 });
    expect(screening.status).toBe(200);
    const records = indexerRecords(6, { withAbstractOnly: true });
    const indexer = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, project_id: 9201 });
    expect(indexer.status).toBe(200);
    expect((await terminalState(infra, screening.body.job_id, 60_000)).status).toBe("completed");
    expect((await terminalState(indexerInfra, indexer.body.job_id, 60_000)).status).toBe("completed");
    const degraded = await waitFor(async () => {
      const res = await ready();
      return res.body?.checks?.database?.startsWith("error") ? res : null;
    }, 30_000, 500);
    expect(degraded.status).toBe(503);

    await relay.open(); // same port
    await waitFor(async () => (await ready()).body?.checks?.database === "ok", 60_000, 500);
    const listed = await waitFor(async () => {
      const [s, i] = await Promise.all([stack.http("GET", "/v1/screening/jobs?limit=100"), stack.http("GET", "/v1/indexer/jobs?limit=100")]);
      const sJob = s.body?.find?.((j: { job_id: string }) => j.job_id === screening.body.job_id);
      const iJob = i.body?.find?.((j: { job_id: string }) => j.job_id === indexer.body.job_id);
      return sJob?.status === "completed" && iJob?.status === "completed" ? { sJob, iJob } : null;
    }, 60_000, 500);
    expect(listed.sJob.status).toBe("completed");

    // Results too: the first poll answers from the live registry, the second from the database.
    expect((await stack.http("GET", `/v1/screening/jobs/${screening.body.job_id}`)).body.results).toHaveLength(30);
    const stored = await stack.http("GET", `/v1/screening/jobs/${screening.body.job_id}`);
    expect(stored.status).toBe(200);
    expect(stored.body.results.map((r: { id: string }) => r.id)).toEqual(screeningPapers(30).map((p) => p.id));
    const indexed = await stack.http("GET", `/v1/indexer/jobs/${indexer.body.job_id}`);
    expect(indexed.body.partial_results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
  });
});
