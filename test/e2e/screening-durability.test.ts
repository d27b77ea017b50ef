import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { startStack, waitFor, type RunningProcess, type Stack } from "../support/stack";
import { CRITERIA, promptTitles, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

const LABEL_BATCH = 5;

describe("screening jobs survive their workers (SIGKILL, exhausted deliveries, orphans, SIGTERM hand-back)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 150, respond: screeningResponder() });
    stack = await startStack({
      services: { screening: 1 },
      env: {
        OPENAI_API_KEY: "sk-durability",
        OPENAI_BASE_URL: provider.url,
        JOB_ACK_WAIT_MS: "3000",
        JOB_ORPHAN_LEASE_MS: "1500",
        LLM_CONCURRENCY: "3",
        SCREENING_LABEL_BATCH: String(LABEL_BATCH),
      },
    });
    link = new NatsLink({ servers: stack.natsUrl, name: "screening-durability-test" });
    infra = await openJobInfra(await link.ready(), "screening", { ackWaitMs: 3000 });
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  const liveWorker = () => stack.processes.find((p) => p.name === "screening" && p.child.exitCode === null && p.child.signalCode === null) as RunningProcess;
  const labellingRequests = () =>
    provider
      .chatRequests()
      .map((r) => ({ record: r, body: r.body as FakeChatRequest }))
      .filter(({ body }) => schemaNameOf(body).startsWith("screening_labels_"));
  const stateOf = async (id: string) => (await infra.registry.get(id))?.state;
  const terminal = (id: string, timeoutMs = 120_000) =>
    waitFor(async () => {
      const state = await stateOf(id);
      return state && (state.status === "completed" || state.status === "failed") ? state : null;
    }, timeoutMs, 100);

  it("SIGKILL mid-job: the job completes on a second worker, every paper once, no labelled paper sent again", async () => {
    provider.reset();
    const papers = screeningPapers(150, { tagTitles: true });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA });
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;

    await waitFor(() => labellingRequests().filter((r) => r.record.status === 200).length >= 8, 60_000, 20);
    await stack.stopProcess(liveWorker(), "SIGKILL");
    const killedAt = Date.now();
    // What the killed worker had checkpointed is exactly what must not be paid for again.
    const saved = await infra.checkpoints.load<{ votes: unknown[] }>(id, "labelling");
    const finished = new Set<string>();
    for (const [unit, data] of saved) {
      const start = Number(unit) * LABEL_BATCH;
      data.votes.forEach((_, i) => finished.add(papers[start + i]!.title));
    }
    expect(finished.size).toBeGreaterThanOrEqual(8 * LABEL_BATCH - 3 * LABEL_BATCH); // all but those in flight
    expect((await stateOf(id))?.status).toBe("running");

    await stack.startService("screening");
    const final = await terminal(id);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.attempt).toBeGreaterThanOrEqual(2);

    const after = labellingRequests().filter((r) => r.record.receivedAt > killedAt);
    expect(after.length).toBeGreaterThan(0);
    const resent = after.flatMap((r) => promptTitles(r.body)).filter((title) => finished.has(title));
    expect(resent).toEqual([]);

    const poll = await stack.http("GET", `/v1/screening/jobs/${id}`);
    expect(poll.status).toBe(200);
    expect(poll.body.results.map((r: { id: string }) => r.id)).toEqual(papers.map((p) => p.id));
    expect(poll.body.results.every((r: { votes: unknown[] }) => r.votes.length === 5)).toBe(true);
  });

  it("a job whose deliveries are exhausted by crashes ends failed with a clear error", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(150), criteria: CRITERIA });
    const id = created.body.job_id as string;
    await waitFor(async () => (await stateOf(id))?.status === "running", 30_000, 20);
    await stack.stopProcess(liveWorker(), "SIGKILL");
    // The next worker allows a single attempt: the redelivery after the crash is one too many.
    await stack.startService("screening", { JOB_MAX_ATTEMPTS: "1" });
    const final = await terminal(id);
    expect(final.status).toBe("failed");
    expect(final.error).toMatch(/abandoned.*delivery attempts/);
    const poll = await stack.http("GET", `/v1/screening/jobs/${id}`);
    expect(poll.body).toMatchObject({ status: "failed", error_category: "unknown", error_retryable: false });
  });

  it("reaps an orphaned job of a project before admitting a new one (error_category orphan_cleanup)", async () => {
    const projectId = 7007;
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(150), project_id: projectId });
    const orphanId = created.body.job_id as string;
    await waitFor(async () => (await stateOf(orphanId))?.status === "running", 30_000, 20);
    await stack.stopProcess(liveWorker(), "SIGKILL");
    // Its command is lost too (e.g. the stream was restored from an older backup): no worker will ever run it.
    await infra.queue.discard(orphanId);
    await new Promise((r) => setTimeout(r, 1_600)); // past JOB_ORPHAN_LEASE_MS since its last heartbeat
    await stack.startService("screening");

    const next = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(5), project_id: projectId, mock: true });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    const orphan = await stack.http("GET", `/v1/screening/jobs/${orphanId}`);
    expect(orphan.status).toBe(200);
    expect(orphan.body).toMatchObject({ status: "failed", error_category: "orphan_cleanup" });
    expect(orphan.body.error).toMatch(/orphaned/);
    expect(orphan.body.completed_at).toBeTruthy();
    expect((await terminal(next.body.job_id)).status).toBe("completed");
  });

  it("SIGTERM mid-job: the job is handed back at once and continues on another worker within 5 seconds", async () => {
    const standby = await stack.startService("screening");
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(150), criteria: CRITERIA });
    const id = created.body.job_id as string;
    const running = await waitFor(async () => {
      const state = await stateOf(id);
      return state?.status === "running" && state.worker ? state : null;
    }, 30_000, 20);
    const owner = stack.processes.find((p) => p.name === "screening" && p.child.exitCode === null && p.output().includes(running.worker!))!;
    const other = owner === standby ? liveWorker() : standby;
    expect(other).toBeDefined();
    const stoppedAt = Date.now();
    const stopping = stack.stopProcess(owner, "SIGTERM");
    const resumed = await waitFor(async () => {
      const state = await stateOf(id);
      return state?.worker && state.worker !== running.worker ? state : null;
    }, 10_000, 50);
    const resumedAfterMs = Date.now() - stoppedAt;
    await stopping;
    // Within 5 s (the acceptance bound), and as a hand-back (counted in `handoffs`), not an ack-wait redelivery.
    expect(resumedAfterMs).toBeLessThan(5_000);
    expect(resumed.handoffs).toBeGreaterThanOrEqual(1);
    expect((await terminal(id)).status).toBe("completed");
  });
});
