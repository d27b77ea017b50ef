import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexerJob, JobStateEvent, ScreeningJob, type IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { freePort, spawnService, stopProcess, waitForPort } from "../../scripts/lib/launch";
import { indexerRecords } from "../support/dataset";
import { parseSse, readEventStream, type SseEvent } from "../support/sse";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "./screening-fixtures";

/**
 * Job progress as server-sent events, through real gateways against a real nats-server and the
 * fake provider: from pending to the terminal poll body for both job kinds, resumed with
 * Last-Event-ID without repeats, 200 streams on one gateway, the stream limit and shutdown.
 */

const SERVER_KEY = "sk-job-events-server";
const JOB_KEY_SECRET = "job-events-test-job-key-secret-0123456789";
const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

type Kind = "screening" | "indexer";

/** What a stream must look like: state events with growing numeric ids from `pending` on, then one `end` event that equals the poll. */
function checkStream(events: SseEvent[], kind: Kind, jobId: string): { states: ReturnType<typeof JobStateEvent.parse>[]; end: Record<string, unknown> } {
  expect(events.length).toBeGreaterThan(1);
  const end = events.at(-1)!;
  expect(end.event).toBe("end");
  expect(end.id).toBe("end");
  const body = JSON.parse(end.data) as Record<string, unknown>;
  expect((kind === "screening" ? ScreeningJob : IndexerJob).safeParse(body).success, end.data.slice(0, 300)).toBe(true);
  expect(body).toMatchObject({ job_id: jobId, status: "completed" });
  const stateEvents = events.slice(0, -1);
  const states = stateEvents.map((e) => {
    expect(e.event).toBe("state");
    expect(e.id).toMatch(/^\d+$/);
    return JobStateEvent.parse(JSON.parse(e.data));
  });
  const ids = stateEvents.map((e) => Number(e.id));
  for (let i = 1; i < ids.length; i++) expect(ids[i]!).toBeGreaterThan(ids[i - 1]!);
  for (let i = 1; i < states.length; i++) expect(states[i]!.progress).toBeGreaterThanOrEqual(states[i - 1]!.progress);
  for (const state of states) expect(state.job_id).toBe(jobId);
  return { states, end: body };
}

describe("job events (server-sent events) through the gateway", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    const screening = screeningResponder();
    const extraction = extractionResponder();
    provider = await startFakeProvider({ latencyMs: 120, respond: (request, context) => screening(request, context) ?? extraction(request) });
    stack = await startStack({
      gateways: 2,
      services: { screening: 1, indexer: 1 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        JOB_KEY_SECRET,
        // One job at a time per service: a second job stays pending while the first runs.
        JOB_CONCURRENCY: "1",
        LLM_CONCURRENCY: "2",
        INDEXER_JOB_RECORD_CONCURRENCY: "1",
        EVENT_HEARTBEAT_MS: "300",
        MAX_EVENT_STREAMS: "300",
        // 200 streams of one key below: this suite is about a gateway's streams, not one owner's share.
        EVENT_STREAMS_PER_OWNER: "300",
      },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const eventsUrl = (kind: Kind, jobId: string, prefix = "/v1", base = stack.baseUrl) => `${base}${prefix}/${kind}/jobs/${jobId}/events`;
  const screeningJob = async (papers: number, projectId: number) => {
    const res = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(papers), criteria: CRITERIA, repetitions: 1, project_id: projectId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.job_id as string;
  };
  const indexerJob = async (records: number) => {
    const res = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(records, { withAbstractOnly: true }), fields: FIELDS });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.job_id as string;
  };

  it("curl -N shows a screening job from pending to its terminal poll body", async () => {
    // The only worker slot is taken, so the followed job is pending when the stream opens.
    const ahead = await screeningJob(12, 7101);
    const jobId = await screeningJob(12, 7102);
    const curl = spawn("curl", ["-sN", "--max-time", "90", "-H", `X-API-Key: ${TEST_API_KEY}`, eventsUrl("screening", jobId)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    curl.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const [code] = await new Promise<[number | null]>((resolve) => curl.on("close", (c) => resolve([c])));
    expect(code, out.slice(-500)).toBe(0); // curl exits 0 when the server ends the stream

    expect(out.startsWith("retry: ")).toBe(true);
    const events: SseEvent[] = [];
    let comments = 0;
    expect(parseSse(out, (e) => events.push(e), () => comments++)).toBe("");
    const { states, end } = checkStream(events, "screening", jobId);
    expect(states[0]!.status).toBe("pending");
    expect(states.some((s) => s.status === "running" && s.stage === "labelling")).toBe(true);
    expect(new Set(states.map((s) => s.stage))).toEqual(new Set(["", "labelling", "reasoning", "clustering", "assignment"]));
    // Usage so far is reported while it runs, and stage timings fill in as stages end.
    expect(states.some((s) => s.usage !== null && Number(s.usage.input_tokens) > 0)).toBe(true);
    expect(Object.keys(states.at(-1)!.stage_timings).length).toBeGreaterThan(0);
    expect(comments).toBeGreaterThan(0); // heartbeats every 300 ms while it ran

    // The end event is the poll of the finished job, byte for byte.
    const poll = await stack.http("GET", `/v1/screening/jobs/${jobId}`);
    expect(poll.status).toBe(200);
    expect(end).toEqual(poll.body);
    expect((end.results as unknown[]).length).toBe(12);
    expect(events.at(-1)!.data).toBe(JSON.stringify(poll.body));
    await waitFor(async () => (await stack.http("GET", `/v1/screening/jobs/${ahead}`)).body.status === "completed", 60_000);
  });

  it("an indexer job's stream resumed with Last-Event-ID on another gateway repeats nothing (unprefixed path)", async () => {
    const ahead = await indexerJob(4);
    const jobId = await indexerJob(8);
    const first = await readEventStream(eventsUrl("indexer", jobId), { until: (events) => events.filter((e) => e.event === "state").length >= 3 });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const lastId = first.events.at(-1)!.id!;
    expect(lastId).toMatch(/^\d+$/);
    expect(JobStateEvent.parse(JSON.parse(first.events[0]!.data)).status).toBe("pending");

    // Event ids are the live state's revisions, the same on every replica: the other gateway resumes.
    const rest = await readEventStream(eventsUrl("indexer", jobId, "", stack.gatewayUrls[1]), { lastEventId: lastId });
    expect(rest.closedByServer).toBe(true);
    for (const event of rest.events.slice(0, -1)) expect(Number(event.id)).toBeGreaterThan(Number(lastId));
    const all = [...first.events, ...rest.events];
    const ids = all.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const { states, end } = checkStream(all, "indexer", jobId);
    expect(states.some((s) => s.items_total === 8 && (s.items_done ?? 0) > 0)).toBe(true);
    expect((end.partial_results as unknown[]).length).toBe(8);

    // A client that saw the end event and reconnects (as EventSource does) is told there is nothing more.
    const after = await fetch(eventsUrl("indexer", jobId), { headers: { "x-api-key": TEST_API_KEY, "last-event-id": "end" } });
    expect(after.status).toBe(204);
    // A finished job's stream is its end event at once.
    const finished = await readEventStream(eventsUrl("indexer", jobId));
    expect(finished.events.map((e) => e.event)).toEqual(["end"]);
    expect(JSON.parse(finished.events[0]!.data)).toEqual(end);
    await waitFor(async () => (await stack.http("GET", `/v1/indexer/jobs/${ahead}`)).body.status === "completed", 60_000);
  });

  it("answers like a poll for an unknown job, without a key, and for a malformed Last-Event-ID", async () => {
    const unknown = await readEventStream(eventsUrl("screening", "00000000-0000-4000-8000-000000000000"));
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toEqual({ detail: "Job not found" });
    const indexerUnknown = await readEventStream(eventsUrl("indexer", "no-such-job", ""));
    expect(indexerUnknown.status).toBe(404);
    const anonymous = await fetch(eventsUrl("screening", "whatever"));
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { detail: { error_code: string } }).detail.error_code).toBe("auth");
    const malformed = await readEventStream(eventsUrl("screening", "whatever"), { lastEventId: "12abc" });
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body).detail[0].loc).toEqual(["header", "last-event-id"]);
  });

  it("200 concurrent streams on one gateway all receive the terminal event", async () => {
    const jobs = [await screeningJob(30, 7201), await indexerJob(6)];
    const reads = Array.from({ length: 200 }, (_, i) => readEventStream(eventsUrl(i % 2 === 0 ? "screening" : "indexer", jobs[i % 2]!), { timeoutMs: 110_000 }));
    const results = await Promise.all(reads);
    const ends = results.map((r) => r.events.at(-1));
    expect(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body}`)).toEqual([]);
    expect(ends.filter((e) => e?.event !== "end")).toEqual([]);
    // Every stream got the same bytes for the same job.
    for (let i = 2; i < 200; i++) expect(ends[i]!.data).toBe(ends[i % 2]!.data);
    expect(JSON.parse(ends[0]!.data)).toMatchObject({ job_id: jobs[0], status: "completed" });
    expect(JSON.parse(ends[1]!.data)).toMatchObject({ job_id: jobs[1], status: "completed" });
  });

  describe("on a gateway limited to 2 streams", () => {
    let gateway: ChildProcess;
    let url: string;
    let output = "";
    beforeAll(async () => {
      const port = await freePort();
      gateway = spawnService(
        "gateway",
        { NATS_URL: stack.natsUrl, API_KEY: TEST_API_KEY, JOB_KEY_SECRET, PORT: String(port), HOST: "127.0.0.1", MAX_EVENT_STREAMS: "2", EVENT_HEARTBEAT_MS: "200", SHUTDOWN_TIMEOUT_MS: "5000" },
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      gateway.stdout?.on("data", (c: Buffer) => (output += c.toString()));
      gateway.stderr?.on("data", (c: Buffer) => (output += c.toString()));
      await waitForPort(port, 30_000, gateway);
      url = `http://127.0.0.1:${port}`;
    });
    afterAll(async () => {
      if (gateway.exitCode === null) await stopProcess(gateway);
    });

    it("answers 503 beyond the limit, frees a slot when a client leaves, and closes its streams on shutdown", async () => {
      // A job that cannot finish while this runs: the provider hangs.
      provider.setBehaviour({ mode: "hang" });
      const jobId = await screeningJob(5, 7301);
      const streamUrl = `${url}/v1/screening/jobs/${jobId}/events`;
      const open = () => {
        const controller = new AbortController();
        const events: SseEvent[] = [];
        const done = readEventStream(streamUrl, { onEvent: (e) => events.push(e), signal: controller.signal, timeoutMs: 60_000 });
        return { events, done, leave: () => controller.abort() };
      };
      const a = open();
      const b = open();
      await waitFor(() => a.events.length > 0 && b.events.length > 0);
      expect(JSON.parse(a.events[0]!.data)).toMatchObject({ job_id: jobId });

      const refused = await fetch(streamUrl, { headers: { "x-api-key": TEST_API_KEY } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(await refused.json()).toEqual({
        detail: { message: expect.stringContaining("MAX_EVENT_STREAMS"), error_code: "unknown", error_reason: "service_unavailable", retryable: true },
      });

      // A client that leaves gives its slot back.
      b.leave();
      expect((await b.done).closedByServer).toBe(false);
      const c = await waitFor(async () => {
        const attempt = open();
        const first = await Promise.race([waitFor(() => attempt.events.length > 0, 3_000).then(() => true), attempt.done.then(() => false)]);
        return first ? attempt : null;
      }, 15_000);

      const stopped = Date.now();
      await stopProcess(gateway, "SIGTERM", 10_000);
      const [ra, rc] = await Promise.all([a.done, c.done]);
      expect(ra.closedByServer && rc.closedByServer).toBe(true);
      expect(Date.now() - stopped).toBeLessThan(10_000);
      expect(gateway.exitCode, output.slice(-4000)).toBe(0);
      provider.setBehaviour({ mode: "normal" });
    });
  });
});
