import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LiveJobState } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import type { NatsLink } from "@litrev/messaging";
import type { JobInfra } from "../../libs/jobs/src";
import { screeningPapers, screeningResponder } from "../e2e/screening-fixtures";
import { http, startStack, waitFor, type Stack } from "../support/stack";
import { isTerminal, jobInfraFor } from "./support";

/**
 * 200 screening job creations across 50 projects in one burst, through two gateways and two
 * screening replicas (Build 6: "correct 200/409 split and every accepted job completes").
 *
 * Round 1 (live jobs against a slow fake provider, so no job can finish during the burst): exactly
 * one 200 per project, and the other 150 answers are 409s naming that project's job.
 * Round 2 (mock jobs, which finish in well under a second, created in four waves 300 ms apart, so
 * a later creation for a project may legitimately succeed): checked by invariants instead, read from the live-state bucket's own
 * order of writes (KV revisions): no project ever has two active jobs at once; every 409 names an
 * accepted job of its project that had not ended when the 409's request was sent; every accepted
 * job completes.
 */

const PROJECTS = 50;
const CREATIONS = 200;

interface Answer {
  projectId: number;
  status: number;
  jobId?: string;
  named?: string;
  sentAt: number;
  receivedAt: number;
}

/** Every write to the job-state bucket, in bucket order: when each job first appeared active and when it ended. */
class StateLog {
  readonly first = new Map<string, { revision: number; projectId: number | null }>();
  readonly end = new Map<string, { revision: number; at: number; status: string }>();
  #stop: (() => void) | undefined;

  async start(infra: JobInfra): Promise<void> {
    const watcher = await infra.registry.kv.watch({ key: "job.*" });
    this.#stop = () => watcher.stop();
    void (async () => {
      for await (const entry of watcher) {
        if (entry.operation !== "PUT") continue;
        const state = LiveJobState.parse(entry.json());
        if (!this.first.has(state.job_id)) this.first.set(state.job_id, { revision: entry.revision, projectId: state.project_id });
        if (isTerminal(state) && !this.end.has(state.job_id)) this.end.set(state.job_id, { revision: entry.revision, at: entry.created.getTime(), status: state.status });
      }
    })();
  }

  stop(): void {
    this.#stop?.();
  }
}

describe(`${CREATIONS} screening job creations across ${PROJECTS} projects in a burst`, () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 2_000, respond: screeningResponder() });
    stack = await startStack({
      gateways: 2,
      services: { screening: 2 },
      // One key fires all 200 creations at once: its per-client limits (429: requests in flight, rate,
      // live jobs) are not what this test is about.
      env: { OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url, JOB_CONCURRENCY: "32", LLM_CONCURRENCY: "64", KEY_CONCURRENCY: "0", KEY_RATE_PER_S: "0", OWNER_MAX_LIVE_JOBS: "500" },
    });
    ({ link, infra } = await jobInfraFor(stack, "screening", "resilience-burst"));
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  /** Four waves of one creation per project, `waveGapMs` apart (0: all at once), alternating gateways. */
  async function burst(firstProject: number, mock: boolean, waveGapMs: number): Promise<Answer[]> {
    const papers = screeningPapers(5);
    return Promise.all(
      Array.from({ length: CREATIONS }, async (_, i) => {
        const projectId = firstProject + (i % PROJECTS);
        await new Promise((r) => setTimeout(r, Math.floor(i / PROJECTS) * waveGapMs));
        const sentAt = Date.now();
        const res = await http(stack.gatewayUrls[i % 2]!, "POST", "/v1/screening/jobs", { papers, project_id: projectId, mock });
        const answer: Answer = { projectId, status: res.status, sentAt, receivedAt: Date.now() };
        if (res.status === 200) answer.jobId = res.body.job_id;
        if (res.status === 409) answer.named = /job_id ([0-9a-f-]{36})/.exec(String(res.body.detail))?.[1];
        return answer;
      }),
    );
  }

  const projectsOf = (first: number) => Array.from({ length: PROJECTS }, (_, i) => first + i);
  const byProject = (answers: Answer[], projectId: number) => answers.filter((a) => a.projectId === projectId);

  it("live jobs outlasting the burst: exactly one 200 per project, every other answer a 409 naming it; all complete", async () => {
    const log = new StateLog();
    await log.start(infra);
    try {
      const started = Date.now();
      const answers = await burst(7000, false, 0);
      const burstMs = Date.now() - started;
      const counts = { ok: answers.filter((a) => a.status === 200).length, conflict: answers.filter((a) => a.status === 409).length };
      console.log(`[burst/live] ${CREATIONS} creations in ${burstMs} ms: ${counts.ok} × 200, ${counts.conflict} × 409`);
      expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
      // The premise of an exact split: no job ended while creations were still being answered.
      expect(log.end.size, "a job ended during the burst; the provider is not slow enough for this machine").toBe(0);

      for (const projectId of projectsOf(7000)) {
        const mine = byProject(answers, projectId);
        const accepted = mine.filter((a) => a.status === 200);
        expect(accepted, `project ${projectId}`).toHaveLength(1);
        for (const conflict of mine.filter((a) => a.status === 409)) expect(conflict.named).toBe(accepted[0]!.jobId);
      }
      expect(counts).toEqual({ ok: PROJECTS, conflict: CREATIONS - PROJECTS });

      const ids = answers.filter((a) => a.jobId).map((a) => a.jobId!);
      await waitFor(() => ids.every((id) => log.end.has(id)), 90_000, 200);
      expect(ids.map((id) => log.end.get(id)!.status)).toEqual(Array(PROJECTS).fill("completed"));
    } finally {
      log.stop();
    }
  });

  it("mock jobs finishing during the burst: never two active jobs per project, every 409 names a job that was active, every accepted job completes", async () => {
    const log = new StateLog();
    await log.start(infra);
    try {
      const started = Date.now();
      // Waves 300 ms apart: long enough for many mock jobs to finish between a project's creations.
      const answers = await burst(8000, true, 300);
      const accepted = answers.filter((a) => a.status === 200);
      const conflicts = answers.filter((a) => a.status === 409);
      console.log(`[burst/mock] ${CREATIONS} creations in ${Date.now() - started} ms: ${accepted.length} × 200, ${conflicts.length} × 409`);
      expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
      expect(accepted.length).toBeGreaterThanOrEqual(PROJECTS);

      const ids = accepted.map((a) => a.jobId!);
      await waitFor(() => ids.every((id) => log.end.has(id) && log.first.has(id)), 60_000, 100);
      expect(ids.map((id) => log.end.get(id)!.status)).toEqual(Array(ids.length).fill("completed"));

      for (const projectId of projectsOf(8000)) {
        const mine = byProject(answers, projectId);
        const mineIds = mine.filter((a) => a.status === 200).map((a) => a.jobId!);
        expect(mineIds.length, `project ${projectId}`).toBeGreaterThanOrEqual(1);
        // In the bucket's order of writes, each job of the project ends before the next one appears.
        const spans = mineIds.map((id) => ({ id, from: log.first.get(id)!.revision, to: log.end.get(id)!.revision })).sort((a, b) => a.from - b.from);
        for (let i = 1; i < spans.length; i++) expect(spans[i]!.from, `project ${projectId}: ${spans[i - 1]!.id} / ${spans[i]!.id}`).toBeGreaterThan(spans[i - 1]!.to);
        // A 409 names one of the project's accepted jobs, which had not ended when the request was sent.
        for (const conflict of mine.filter((a) => a.status === 409)) {
          expect(mineIds, `project ${projectId}`).toContain(conflict.named);
          expect(log.end.get(conflict.named!)!.at).toBeGreaterThanOrEqual(conflict.sentAt);
        }
      }
      // No job exists that its client was not told about.
      expect([...log.first.values()].filter((f) => f.projectId !== null && f.projectId >= 8000)).toHaveLength(ids.length);
    } finally {
      log.stop();
    }
  });
});
