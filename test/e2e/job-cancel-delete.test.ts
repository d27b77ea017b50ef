import { readFileSync } from "node:fs";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobNames, type IndexerField, type JobService } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { inboxPrefix } from "@litrev/messaging";
import { indexerRecords } from "../support/dataset";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { startStack, waitFor, type HttpResult, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * Cancel and delete end to end, for both job kinds, on a locked-down nats-server (every process
 * with its own NATS permissions) with two gateways and two replicas of each job service: the
 * cancel reaches whichever replica runs the job, whichever gateway and service replica take it.
 * After a delete, every stream of the job's service is listed (its subjects, with object names
 * decoded, and the listing index's messages) and nothing may name the job.
 */

const ALICE = "alice-cancel-key-0123456789abcdef";
const BOB = "bob-cancel-key-0123456789abcdefgh";
const SERVER_KEY = "sk-cancel-server";
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];

interface Kind {
  service: JobService;
  /** The poll's item list. */
  items: "results" | "partial_results";
  body(project: number): Record<string, unknown>;
  total: number;
  /** The running job has finished some items (not all): the moment to cancel. */
  underway(poll: HttpResult["body"]): boolean;
}

const PAPERS = 80;
const RECORDS = 30;
const KINDS: Kind[] = [
  {
    service: "screening",
    items: "results",
    body: (project) => ({ papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: 1, threshold: 1, project_id: project }),
    total: PAPERS,
    underway: (poll) => poll.status === "running" && poll.progress > 0.02,
  },
  {
    service: "indexer",
    items: "partial_results",
    body: (project) => ({ records: indexerRecords(RECORDS, { withAbstractOnly: true }), fields: FIELDS, project_id: project }),
    total: RECORDS,
    underway: (poll) => poll.status === "running" && poll.partial_results.length >= 2,
  },
];

describe("cancel and delete jobs (2 gateways, 2 replicas of each job service, locked NATS)", () => {
  let screeningProvider: FakeProvider;
  let indexerProvider: FakeProvider;
  let stack: Stack;

  /** A connection as the job service's own NATS user (it may read every stream of its service). */
  const withServiceNats = async <T>(service: JobService, use: (nc: NatsConnection) => Promise<T>): Promise<T> => {
    const nc = await connect({ servers: stack.natsUrl, user: service, pass: stack.natsCredentials![service], inboxPrefix: inboxPrefix(service) });
    try {
      return await use(nc);
    } finally {
      await nc.close();
    }
  };
  const as = (key: string, gateway = 0) => ({ headers: { "x-api-key": key }, baseUrl: stack.gatewayUrls[gateway]! });

  beforeAll(async () => {
    // Slow providers and one call at a time: a job runs for seconds, finishing items as it goes.
    screeningProvider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 250, respond: screeningResponder() });
    indexerProvider = await startFakeProvider({ validKeys: [SERVER_KEY], latencyMs: 250, respond: extractionResponder() });
    stack = await startStack({
      services: {},
      gateways: 2,
      lockedNats: true,
      env: { API_KEYS: `alice:use:${ALICE},bob:use:${BOB}`, OPENAI_API_KEY: SERVER_KEY, LLM_MAX_ATTEMPTS: "2" },
    });
    for (let i = 0; i < 2; i++) {
      await stack.startService("screening", { OPENAI_BASE_URL: screeningProvider.url, SCREENING_CALL_CONCURRENCY: "1", SCREENING_LABEL_BATCH: "2" });
      await stack.startService("indexer", { OPENAI_BASE_URL: indexerProvider.url, INDEXER_JOB_RECORD_CONCURRENCY: "1" });
    }
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await screeningProvider?.close();
    await indexerProvider?.close();
  });

  for (const [k, kind] of KINDS.entries()) {
    const jobs = `/v1/${kind.service}/jobs`;
    const project = 7_100 + k;
    const create = async (key = ALICE) => {
      const res = await stack.http("POST", jobs, kind.body(project), as(key));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.job_id as string;
    };
    const poll = (id: string, gateway = 0, key = ALICE) => stack.http("GET", `${jobs}/${id}`, undefined, as(key, gateway));

    it(`${kind.service}: cancels a running job on another replica, keeps what finished, frees the project; delete erases every trace`, { timeout: 180_000 }, async () => {
      const id = await create();
      await waitFor(async () => (kind.underway((await poll(id)).body) ? true : null), 60_000, 50);

      // Another client: not found, neither cancelled nor deleted.
      expect((await stack.http("POST", `${jobs}/${id}/cancel`, undefined, as(BOB))).status).toBe(404);
      expect((await stack.http("DELETE", `${jobs}/${id}`, undefined, as(BOB))).status).toBe(404);
      expect((await poll(id)).body.status).toBe("running");

      // Through the second gateway, without /v1: answered once the job is terminal.
      const cancelled = await stack.http("POST", `/${kind.service}/jobs/${id}/cancel`, {}, as(ALICE, 1));
      expect(cancelled.status, JSON.stringify(cancelled.body).slice(0, 300)).toBe(200);
      expect(cancelled.body).toMatchObject({ job_id: id, status: "failed", error: "Cancelled by the client", error_category: "validation", error_reason: "cancelled", error_retryable: false });
      // What finished is kept and exportable, marked partial (the indexer's poll shows it too; a
      // failed screening job's poll has no results, as the spec says).
      const exported = await stack.http("GET", `${jobs}/${id}/export?format=jsonl`, undefined, as(ALICE));
      expect(exported.status).toBe(200);
      expect(exported.headers.get("x-litrev-partial")).toBe("true");
      const kept = String(exported.body).trim().split("\n").filter(Boolean).length;
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(kind.total);
      if (kind.items === "partial_results") expect(cancelled.body.partial_results).toHaveLength(kept);

      // Both gateways read the same ended job; the project takes a new job at once.
      for (const gateway of [0, 1]) expect((await poll(id, gateway)).body).toMatchObject({ status: "failed", error_category: "validation", error_reason: "cancelled", [kind.items]: cancelled.body[kind.items] });
      const next = await create();
      expect((await poll(next)).body.status).toMatch(/^(pending|running)$/);

      // A terminal job: 409 naming its status.
      const again = await stack.http("POST", `${jobs}/${id}/cancel`, undefined, as(ALICE));
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ detail: `Job ${id} is already failed` });

      // The checker sees the ended job's traces before it is deleted (so an empty answer later means something).
      const before = await withServiceNats(kind.service, (nc) => tracesOf(nc, kind.service, [id]));
      expect(before.some((trace) => trace.includes("KV_")), before.join("\n")).toBe(true);
      expect(before.some((trace) => trace.includes("OBJ_")), before.join("\n")).toBe(true);

      // Deleting a running job cancels it first; deleting the ended one erases it. Both gateways
      // had the ended job's artifact cached: neither answers it any more.
      expect((await stack.http("DELETE", `${jobs}/${next}`, undefined, as(ALICE, 1))).status).toBe(204);
      const deleted = await stack.http("DELETE", `${jobs}/${id}`, undefined, as(ALICE, 0));
      expect(deleted.status).toBe(204);
      expect(deleted.body ?? "").toBe("");
      for (const gone of [id, next]) {
        for (const gateway of [0, 1]) {
          expect((await poll(gone, gateway)).status, `${gone} via gateway ${gateway}`).toBe(404);
          expect((await stack.http("GET", `${jobs}/${gone}/report`, undefined, as(ALICE, gateway))).status).toBe(404);
          expect((await stack.http("GET", `${jobs}/${gone}/export?format=csv`, undefined, as(ALICE, gateway))).status).toBe(404);
        }
        expect((await stack.http("POST", `${jobs}/${gone}/cancel`, undefined, as(ALICE))).status).toBe(404);
        expect((await stack.http("DELETE", `${jobs}/${gone}`, undefined, as(ALICE))).status).toBe(404);
      }
      const listed = await stack.http("GET", `${jobs}?limit=50`, undefined, as(ALICE));
      expect(listed.status).toBe(200);
      expect((listed.body as { job_id: string }[]).map((j) => j.job_id)).not.toContain(id);
      expect((listed.body as { job_id: string }[]).map((j) => j.job_id)).not.toContain(next);

      // The project is free after the deletions too.
      const third = await create();
      expect((await stack.http("DELETE", `/${kind.service}/jobs/${third}`, undefined, as(ALICE))).status).toBe(204);

      // Nothing in NATS names the deleted jobs: no key, no object, no message.
      expect(await withServiceNats(kind.service, (nc) => tracesOf(nc, kind.service, [id, next, third]))).toEqual([]);
    });
  }

  it("erases a completed screening job's validation samples and certificate with it", { timeout: 120_000 }, async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(60), criteria: CRITERIA, repetitions: 3, threshold: 2, mock: true }, as(ALICE));
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;
    const done = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${id}`, undefined, as(ALICE));
      return res.body.status === "completed" ? res.body : null;
    }, 60_000, 100);
    // Completed: a cancel is a 409.
    expect(await stack.http("POST", `/v1/screening/jobs/${id}/cancel`, undefined, as(ALICE))).toMatchObject({ status: 409, body: { detail: `Job ${id} is already completed` } });
    const drawn = await stack.http("POST", `/v1/screening/jobs/${id}/validation-samples`, { size: 20, seed: 1 }, as(ALICE));
    expect(drawn.status, JSON.stringify(drawn.body).slice(0, 300)).toBe(200);
    const labels = (drawn.body.paper_ids as string[]).map((paper, i) => ({ id: paper, included: i % 2 === 0 }));
    expect((await stack.http("POST", `/v1/screening/jobs/${id}/validation-samples/${drawn.body.sample_id}/labels`, { labels }, as(ALICE))).status).toBe(200);
    expect(done.results).toHaveLength(60);

    const before = await withServiceNats("screening", (nc) => tracesOf(nc, "screening", [id]));
    expect(before.filter((trace) => trace.startsWith("KV_litrev_validation_screening")).length, before.join("\n")).toBeGreaterThanOrEqual(2);
    expect((await stack.http("DELETE", `/v1/screening/jobs/${id}`, undefined, as(ALICE))).status).toBe(204);
    expect((await stack.http("GET", `/v1/screening/jobs/${id}/validation-samples/${drawn.body.sample_id}`, undefined, as(ALICE))).status).toBe(404);
    expect(await withServiceNats("screening", (nc) => tracesOf(nc, "screening", [id]))).toEqual([]);
  });

  it("answers an unknown or malformed job id with 404", { timeout: 60_000 }, async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    for (const path of [`/v1/indexer/jobs/${unknown}/cancel`, "/v1/screening/jobs/not-a-job/cancel"]) {
      expect((await stack.http("POST", path, undefined, as(ALICE))).status).toBe(404);
    }
    expect((await stack.http("DELETE", `/v1/screening/jobs/${unknown}`, undefined, as(ALICE))).status).toBe(404);
  });

  it("needed no NATS permission the processes lack (cancels, erasures and their notices included)", () => {
    const violations = readFileSync(stack.natsLogFile!, "utf8").split("\n").filter((line) => /violation/i.test(line));
    expect(violations).toEqual([]);
  });
});

/**
 * Every trace of the jobs in the service's streams: subjects naming them (object names decoded
 * from their metadata subjects) and messages of the listing index holding their ids.
 */
async function tracesOf(nc: NatsConnection, service: JobService, ids: string[]): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const names = jobNames(service);
  const buckets = [names.stateBucket, names.storeBucket, names.validationBucket].map((b) => `KV_${b}`);
  const objects = [names.dataBucket, names.stagingBucket, names.storeItemsBucket, `litrev_payloads_${service}`];
  const streams = [...buckets, ...objects.map((b) => `OBJ_${b}`), names.commandStream, names.checkpointStream, names.storeIndexStream];
  const found: string[] = [];
  for (const stream of streams) {
    for (const subject of await subjectsOf(jsm, stream)) {
      const meta = /^\$O\.[^.]+\.M\.(.+)$/.exec(subject);
      const readable = meta ? `${subject} (${Buffer.from(meta[1]!, "base64url").toString()})` : subject;
      if (ids.some((id) => readable.includes(id))) found.push(`${stream}: ${readable}`);
    }
  }
  // The listing index has one subject: its messages name the jobs.
  const info = await jsm.streams.info(names.storeIndexStream);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const message = await jsm.streams.getMessage(names.storeIndexStream, { seq }).catch(() => null);
    const text = message ? new TextDecoder().decode(message.data) : "";
    if (ids.some((id) => text.includes(id))) found.push(`${names.storeIndexStream} #${seq}: ${text}`);
  }
  return found;
}

async function subjectsOf(jsm: JetStreamManager, stream: string): Promise<string[]> {
  try {
    const info = await jsm.streams.info(stream, { subjects_filter: ">" });
    return Object.keys(info.state.subjects ?? {});
  } catch (error) {
    if (String(error).includes("stream not found")) return [];
    throw error;
  }
}
