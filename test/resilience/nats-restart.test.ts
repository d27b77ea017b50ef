import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { alive, isTerminal } from "./support";

/**
 * nats-server restarted (same port, same file store) while screening and indexer jobs run and
 * others wait in the queue: every job completes, and the gateway and the services reconnect by
 * themselves (test/e2e/nats-outage.test.ts covers request-reply and configuration; this covers jobs).
 */

const ACK_WAIT_MS = 10_000;
const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

describe.skipIf(Boolean(process.env.NATS_URL))("nats-server restarted mid-job", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    const screening = screeningResponder();
    const extraction = extractionResponder();
    provider = await startFakeProvider({
      latencyMs: 150,
      respond: (request, context) => (schemaNameOf(request as FakeChatRequest).startsWith("screening_") ? screening(request, context) : extraction(request as FakeChatRequest)),
    });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: {
        OPENAI_API_KEY: "sk-resilience",
        OPENAI_BASE_URL: provider.url,
        // One job at a time per worker, so the second job of each service waits in the queue.
        JOB_CONCURRENCY: "1",
        JOB_ACK_WAIT_MS: String(ACK_WAIT_MS),
        LLM_CONCURRENCY: "2",
        INDEXER_JOB_RECORD_CONCURRENCY: "2",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("every running and queued job completes, and everything reconnects without a restart", async () => {
    const jobs: { service: "screening" | "indexer"; id: string; size: number }[] = [];
    for (const n of [60, 20]) {
      const res = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(n), criteria: CRITERIA });
      expect(res.status).toBe(200);
      jobs.push({ service: "screening", id: res.body.job_id, size: n });
    }
    for (const n of [60, 20]) {
      const res = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(n, { withAbstractOnly: true }), fields: FIELDS });
      expect(res.status).toBe(200);
      jobs.push({ service: "indexer", id: res.body.job_id, size: n });
    }
    // Both first jobs running (and part done), both second jobs still queued.
    await waitFor(async () => {
      const [s, i] = await Promise.all([stack.http("GET", `/v1/screening/jobs/${jobs[0]!.id}`), stack.http("GET", `/v1/indexer/jobs/${jobs[2]!.id}`)]);
      return s.body.status === "running" && s.body.progress > 0.1 && i.body.status === "running" && i.body.progress > 0.1;
    }, 60_000, 100);
    const queued = await Promise.all([jobs[1]!, jobs[3]!].map(async (j) => (await stack.http("GET", `/v1/${j.service}/jobs/${j.id}`)).body.status));
    expect(queued).toEqual(["pending", "pending"]);

    const restartedAt = Date.now();
    await stack.restartNats(1_500);

    // Gateway and services reconnect on their own.
    await waitFor(async () => (await stack.http("GET", "/health/ready", undefined, { auth: false })).body?.checks?.nats === "ok", 20_000, 200);

    // Every job completes: read the live state directly (a screening poll of a finished job consumes it).
    const link = new NatsLink({ servers: stack.natsUrl, name: "resilience-nats-restart" });
    try {
      const nc = await link.ready();
      // The stack's ack wait: opening the infrastructure sets the shared consumer's.
      const options = { ackWaitMs: ACK_WAIT_MS };
      const infra: Record<string, JobInfra> = { screening: await openJobInfra(nc, "screening", options), indexer: await openJobInfra(nc, "indexer", options) };
      const finals = await Promise.all(
        jobs.map((j) =>
          waitFor(async () => {
            const state = (await infra[j.service]!.registry.get(j.id))?.state;
            return isTerminal(state) ? state : null;
          }, 90_000, 200),
        ),
      );
      console.log(`[nats-restart] all ${jobs.length} jobs ended ${Date.now() - restartedAt} ms after the restart began`);
      for (const f of finals) expect(f.status, `${f.job_id}: ${f.error}`).toBe("completed");
      for (const f of finals) expect(f.attempt - f.handoffs, `${f.job_id}: crash attempts`).toBeLessThanOrEqual(2);

      // Results are whole: every paper and record once.
      for (const j of jobs) {
        const poll = await stack.http("GET", `/v1/${j.service}/jobs/${j.id}`);
        expect(poll.status).toBe(200);
        const items = j.service === "screening" ? poll.body.results : poll.body.partial_results;
        expect(items).toHaveLength(j.size);
        expect(new Set(items.map((r: { id?: string; ID?: string }) => r.id ?? r.ID)).size).toBe(j.size);
      }
    } finally {
      await link.close();
    }

    // New work flows through the reconnected gateway and services; no process restarted.
    const fresh = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(5), mock: true });
    expect(fresh.status).toBe(200);
    const done = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${fresh.body.job_id}`);
      return res.body?.status === "completed" ? res : null;
    }, 30_000, 200);
    expect(done.body.results).toHaveLength(5);
    expect(stack.processes.every((p) => p.child.exitCode === null && p.child.signalCode === null)).toBe(true);
    expect(alive(stack, "screening")).toHaveLength(1);
  });
});
