import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { LlmClient, keyDigest, loadModelAliases } from "@litrev/llm";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { PROVIDER_BUDGET_BUCKET } from "@litrev/contracts";
import { NatsLink, ProviderBudgets } from "@litrev/messaging";
import { startNatsServer, type NatsServerHandle } from "../../scripts/lib/launch";
import { startStack, waitFor } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * One provider key's budget shared by two worker replicas through NATS: each replica is an
 * LlmClient with its own NATS connection and budget membership, as a service process has, and
 * every call goes through a proxy that counts the calls the provider has in flight at once.
 * Shared, the provider never sees more than the key's LLM_CONCURRENCY; unshared (the control,
 * same run), it sees each replica's whole budget at once: twice as many. Then the same with two
 * real screening worker processes, each running a job on the server key.
 */

const KEY = "sk-shared-budget-e2e";
const CONCURRENCY = 4;
const CALLS_PER_REPLICA = 16;
const request = {
  model: "llm-5-nano",
  schema: z.object({ decision: z.string() }),
  schemaName: "budget_probe",
  system: "You answer.",
  user: "Anything.",
};

/** Forwards to the fake provider and records the most calls it had in flight at once. */
async function countingProxy(target: string): Promise<{ url: string; max(): number; reset(): void; server: Server }> {
  let inFlight = 0;
  let max = 0;
  const server = createServer((req, res) => {
    inFlight++;
    max = Math.max(max, inFlight);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k))) as Record<string, string>;
      void fetch(`${target}${req.url!.replace(/^\/v1/, "")}`, { method: req.method!, headers, body: chunks.length ? Buffer.concat(chunks) : undefined })
        .then(async (answer) => {
          const body = Buffer.from(await answer.arrayBuffer());
          inFlight--;
          res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(body);
        })
        .catch(() => (inFlight--, res.writeHead(502).end()));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/v1`, max: () => max, reset: () => ((max = 0), (inFlight = 0)), server };
}

let nats: NatsServerHandle;
let provider: FakeProvider;
let proxy: Awaited<ReturnType<typeof countingProxy>>;
const links: NatsLink[] = [];
const budgets: ProviderBudgets[] = [];
const work = mkdtempSync(join(tmpdir(), "litrev-budget-"));

beforeAll(async () => {
  nats = await startNatsServer({ storeDir: join(work, "nats") });
  provider = await startFakeProvider({ latencyMs: 150, fields: { decision: "include" } });
  proxy = await countingProxy(provider.url);
  // The bucket as a version before expiry markers made it: the first replica's open must bring them in.
  const link = new NatsLink({ servers: nats.url, name: "older-version" });
  await new Kvm(await link.ready()).create(PROVIDER_BUDGET_BUCKET, { history: 1, ttl: 1_500 });
  await link.close();
});

afterAll(async () => {
  await Promise.all(budgets.map((b) => b.close()));
  await Promise.all(links.map((l) => l.close()));
  proxy?.server.close();
  await provider?.close();
  await nats?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A worker replica's provider client: shared budget through its own NATS connection, or none. */
async function replica(name: string, shared: boolean): Promise<{ client: LlmClient; budgets?: ProviderBudgets }> {
  const options = { apiKey: KEY, baseURL: proxy.url, concurrency: CONCURRENCY, modelAliases: loadModelAliases({}), baseDelayMs: 5, maxDelayMs: 20 };
  if (!shared) return { client: new LlmClient(options) };
  const link = new NatsLink({ servers: nats.url, name });
  links.push(link);
  const membership = await ProviderBudgets.open(await link.ready(), { service: "screening", member: name, secret: "e2e-provider-budget-secret", heartbeatMs: 500 });
  budgets.push(membership);
  return { client: new LlmClient({ ...options, sharedBudgets: membership }), budgets: membership };
}

const burst = (clients: LlmClient[]) => Promise.all(clients.flatMap((client) => Array.from({ length: CALLS_PER_REPLICA }, () => client.structured(request))));

describe("one provider budget per key across replicas (real nats-server, fake provider)", () => {
  it("two replicas sharing the key's budget: the provider sees at most LLM_CONCURRENCY calls at once; unshared, twice that", async () => {
    const [a, b] = [await replica("screening-a", true), await replica("screening-b", true)];
    // Each joins the key's budget with its first call; both then know of the other.
    await a.client.structured(request);
    await b.client.structured(request);
    await waitFor(() => a.budgets!.share(keyDigest(KEY))?.members === 2 && b.budgets!.share(keyDigest(KEY))?.members === 2, 10_000, 20);
    proxy.reset();
    const results = await burst([a.client, b.client]);
    expect(results).toHaveLength(2 * CALLS_PER_REPLICA);
    const shared = proxy.max();

    const [c, d] = [await replica("unshared-c", false), await replica("unshared-d", false)];
    proxy.reset();
    await burst([c.client, d.client]);
    const unshared = proxy.max();

    console.log(`provider's most calls in flight at once, LLM_CONCURRENCY=${CONCURRENCY}, 2 replicas: shared ${shared}, unshared ${unshared}`);
    expect(shared).toBeLessThanOrEqual(CONCURRENCY);
    expect(shared).toBeGreaterThanOrEqual(CONCURRENCY - 1); // the budget is used, not starved
    expect(unshared).toBe(2 * CONCURRENCY);

    // A replica that leaves (graceful shutdown) hands its share back to the one that stays.
    await b.budgets!.close();
    await waitFor(() => a.budgets!.share(keyDigest(KEY))?.members === 1, 10_000, 20);
    proxy.reset();
    await burst([a.client]);
    expect(proxy.max()).toBe(CONCURRENCY);
  }, 60_000);

  it("a key's first use: two replicas whose first calls start at once keep to LLM_CONCURRENCY together", async () => {
    // A key neither replica has used: each joins its budget with these very calls.
    const first = { ...request, user: "First use." };
    const [e, f] = [await replica("first-e", true), await replica("first-f", true)];
    proxy.reset();
    await Promise.all([e.client, f.client].flatMap((client) => Array.from({ length: CALLS_PER_REPLICA }, () => client.structured({ ...first, providerKey: "sk-first-use-e2e" }))));
    console.log(`first use of a key, LLM_CONCURRENCY=${CONCURRENCY}, 2 replicas: provider's most calls in flight at once ${proxy.max()}`);
    expect(proxy.max()).toBeLessThanOrEqual(CONCURRENCY);
  }, 60_000);
});

describe("a replica killed without leaving (real nats-server)", () => {
  it("its entry expires and the server's marker tells the others: the one that stays takes the whole budget", async () => {
    const key = "sk-killed-member-e2e";
    const [g, h] = [await replica("killed-g", true), await replica("killed-h", true)];
    const call = { ...request, providerKey: key };
    await g.client.structured(call);
    await h.client.structured(call);
    await waitFor(() => g.budgets!.share(keyDigest(key))?.members === 2, 10_000, 20);
    const { config } = await (await jetstreamManager(await links[0]!.ready())).streams.info(`KV_${PROVIDER_BUDGET_BUCKET}`);
    expect(config).toMatchObject({ allow_msg_ttl: true, subject_delete_marker_ttl: 1_500_000_000 });

    // Its connection cut, never closed: its entry is left for the bucket's TTL (3 heartbeats of 500 ms) to expire.
    await links.at(-1)!.close();
    const cut = Date.now();
    await waitFor(() => g.budgets!.share(keyDigest(key))?.members === 1, 10_000, 20);
    const droppedAfter = Date.now() - cut;
    console.log(`a member cut off without leaving was dropped by the others after ${droppedAfter} ms (entry TTL 1500 ms)`);
    expect(droppedAfter).toBeLessThan(4_000);
    proxy.reset();
    await Promise.all(Array.from({ length: CALLS_PER_REPLICA }, () => g.client.structured(call)));
    expect(proxy.max()).toBe(CONCURRENCY);
  }, 60_000);
});

describe("one provider budget per key across worker processes (real screening replicas)", () => {
  it("two screening workers running a job each on the server key: the provider never sees more than LLM_CONCURRENCY calls at once", async () => {
    const jobsProvider = await startFakeProvider({ latencyMs: 100, respond: screeningResponder() });
    const counting = await countingProxy(jobsProvider.url);
    const stack = await startStack({
      services: { screening: 2 },
      env: { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: counting.url, LLM_CONCURRENCY: String(CONCURRENCY), JOB_CONCURRENCY: "1", LLM_MAX_ATTEMPTS: "2" },
    });
    try {
      const papers = screeningPapers(20);
      const created = await Promise.all(
        [1, 2].map((project) => stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 1, project_id: 9300 + project })),
      );
      for (const res of created) expect(res.status, JSON.stringify(res.body)).toBe(200);
      const finals = await Promise.all(
        created.map((res) =>
          waitFor(async () => {
            const poll = await stack.http("GET", `/v1/screening/jobs/${res.body.job_id}`);
            return ["completed", "failed"].includes(poll.body.status) ? poll.body : null;
          }, 120_000, 200),
        ),
      );
      expect(finals.map((f) => f.status)).toEqual(["completed", "completed"]);
      // Each worker ran one job (JOB_CONCURRENCY=1), each kept to its share: 4 over two, never 8.
      console.log(`screening workers ×2, LLM_CONCURRENCY=${CONCURRENCY}: provider's most calls in flight at once ${counting.max()}`);
      expect(counting.max()).toBeLessThanOrEqual(CONCURRENCY);
      expect(counting.max()).toBeGreaterThan(CONCURRENCY / 2);
    } finally {
      await stack.stop();
      counting.server.close();
      await jobsProvider.close();
    }
  }, 180_000);
});
