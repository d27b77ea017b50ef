import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import type { NatsLink } from "@litrev/messaging";
import type { JobInfra } from "../../libs/jobs/src";
import { CRITERIA, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";
import { http, startStack, waitFor, type HttpResult, type Stack } from "../support/stack";
import { alive, isTerminal, jobInfraFor, logLines, sleep, startGateway, terminalState } from "./support";

/**
 * SIGKILL of each kind of process while it works (Build 6). What the e2e suites already prove is
 * not repeated here:
 * - a screening worker killed mid-job, the job completing on a restarted worker with every paper
 *   once and no finished batch paid twice: test/e2e/screening-durability.test.ts ("SIGKILL mid-job");
 * - an indexer worker killed mid-job, same guarantees per record: test/e2e/indexer-durability.test.ts;
 * - the last criteria replica killed → an immediate retryable 503: test/e2e/replicas.test.ts.
 * This file covers the remaining angles: requests caught in flight by a crash (criteria, live),
 * a gateway replica killed mid-burst, and a screening replica killed in the middle of admissions.
 */

const classifiedRetryable = (res: HttpResult) =>
  typeof res.body?.detail === "object" && res.body.detail.retryable === true && typeof res.body.detail.error_code === "string";

describe("criteria replica SIGKILLed during a burst of live requests", () => {
  const RPC_TIMEOUT_MS = 4_000;
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 1_500 });
    stack = await startStack({
      services: { criteria: 2 },
      env: { OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url, RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS), LLM_CONCURRENCY: "32" },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const analyze = async () => {
    const started = Date.now();
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Do reminders change prescribing?" });
    return { ...res, ms: Date.now() - started };
  };

  it("in-flight requests fail with a classified retryable error (no hang); the survivor and a restarted replica serve everything", async () => {
    const burst = Promise.all(Array.from({ length: 20 }, analyze));
    // Every request is at the provider (1.5 s each) when one replica dies.
    await waitFor(() => provider.chatRequests().length >= 20, 10_000, 20);
    const [victim] = alive(stack, "criteria");
    await stack.stopProcess(victim!, "SIGKILL");
    const answers = await burst;

    const failed = answers.filter((a) => a.status !== 200);
    console.log(`[sigkill/criteria] burst of 20: ${answers.length - failed.length} × 200, ${failed.length} × ${[...new Set(failed.map((f) => f.status))].join("/")}`);
    // The requests the killed replica held: a 504 timeout, retryable, within the RPC deadline.
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect(f.status).toBe(504);
      expect(f.body.detail).toMatchObject({ error_code: "unknown", error_reason: "timeout", retryable: true });
      expect(f.ms).toBeLessThan(RPC_TIMEOUT_MS + 2_000);
    }
    expect(answers.filter((a) => a.status === 200).every((a) => a.body.status)).toBe(true);

    // The surviving replica answers everything now; a replacement joins without touching the gateway.
    const survivor = await Promise.all(Array.from({ length: 10 }, analyze));
    expect(survivor.map((a) => a.status)).toEqual(Array(10).fill(200));
    const fresh = await stack.startService("criteria", { LOG_LEVEL: "debug" });
    const after = await Promise.all(Array.from({ length: 20 }, analyze));
    expect(after.map((a) => a.status)).toEqual(Array(20).fill(200));
    await waitFor(() => logLines(fresh, /"operation handled"/).length > 0, 5_000);
  });
});

describe("a gateway replica SIGKILLed mid-burst; a restarted gateway finds the existing jobs", () => {
  const JOB_KEY_SECRET = randomBytes(32).toString("base64url");
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    // 12 labelling and 12 reasoning calls, two at a time, 1 s each: the job runs for ~15 s.
    provider = await startFakeProvider({ latencyMs: 1_000, respond: screeningResponder() });
    stack = await startStack({
      gateways: 2,
      services: { screening: 1 },
      env: { OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url, JOB_KEY_SECRET, LLM_CONCURRENCY: "2" },
    });
    ({ link, infra } = await jobInfraFor(stack, "screening", "resilience-sigkill-gateway"));
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  it("the other gateway keeps answering every request; a new gateway serves the running job, its project lock and its result", async () => {
    const [urlA, urlB] = stack.gatewayUrls as [string, string];
    const projectId = 4101;
    const created = await http(urlA, "POST", "/v1/screening/jobs", { papers: screeningPapers(60), criteria: CRITERIA, project_id: projectId });
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;

    // Polls, active-job queries and refused creations through both gateways, while A is killed.
    const results: { via: "A" | "B"; status: number | "connection error"; at: number; detail?: unknown }[] = [];
    let killedAt = Infinity;
    let running = true;
    const client = async (via: "A" | "B", url: string) => {
      const requests = [
        () => http(url, "GET", `/v1/screening/jobs/${id}`),
        () => http(url, "GET", `/v1/screening/active-job?project_id=${projectId}`),
        () => http(url, "POST", "/v1/screening/jobs", { papers: screeningPapers(3), project_id: projectId, mock: true }),
      ];
      for (let i = 0; running; i++) {
        try {
          const res = await requests[i % requests.length]!();
          results.push({ via, status: res.status, at: Date.now(), ...(res.status === 409 ? { detail: res.body.detail } : {}) });
        } catch {
          results.push({ via, status: "connection error", at: Date.now() });
          if (via === "A") await sleep(50);
        }
      }
    };
    const clients = [client("A", urlA), client("A", urlA), client("B", urlB), client("B", urlB)];
    await waitFor(() => results.length >= 40, 10_000, 10);
    const gatewayA = alive(stack, "gateway")[0]!;
    killedAt = Date.now();
    await stack.stopProcess(gatewayA, "SIGKILL");
    await sleep(1_500);
    running = false;
    await Promise.all(clients);

    const fromB = results.filter((r) => r.via === "B");
    const bAfterKill = fromB.filter((r) => r.at > killedAt);
    console.log(`[sigkill/gateway] ${results.length} requests; B answered ${bAfterKill.length} after the kill; A: ${results.filter((r) => r.via === "A" && r.at > killedAt).length} connection errors after it`);
    expect(bAfterKill.length).toBeGreaterThan(20);
    expect(fromB.filter((r) => r.status !== 200 && r.status !== 409)).toEqual([]);
    // Every refused creation (either gateway) names the running job.
    for (const r of results.filter((x) => x.status === 409)) expect(r.detail).toContain(id);
    expect(results.filter((r) => r.via === "A" && r.at > killedAt + 100 && r.status !== "connection error")).toEqual([]);

    // A gateway started afterwards knows the job (live-state bucket), its project lock, and refuses a second one.
    const { url: urlC } = await startGateway(stack, { JOB_KEY_SECRET });
    const poll = await http(urlC, "GET", `/v1/screening/jobs/${id}`);
    expect(poll.status).toBe(200);
    expect(poll.body).toMatchObject({ job_id: id, status: expect.stringMatching(/pending|running/) });
    expect((await http(urlC, "GET", `/v1/screening/active-job?project_id=${projectId}`)).body?.job_id).toBe(id);
    const refused = await http(urlC, "POST", "/v1/screening/jobs", { papers: screeningPapers(3), project_id: projectId, mock: true });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain(id);

    expect((await terminalState(infra, id)).status).toBe("completed");
    const first = await http(urlC, "GET", `/v1/screening/jobs/${id}`);
    expect(first.status).toBe(200);
    expect(first.body.results).toHaveLength(60);
  });
});

describe("a screening replica SIGKILLed in the middle of a burst of admissions", () => {
  const PROJECTS = 32;
  const PAPERS = 1_000; // ~1.8 MB per creation: bodies travel through the payload store, admissions take a while
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    stack = await startStack({
      services: { screening: 2 },
      env: { RPC_TIMEOUT_MS: "5000", JOB_ACK_WAIT_MS: "3000", JOB_ORPHAN_LEASE_MS: "1500", JOB_CONCURRENCY: "4" },
    });
    ({ link, infra } = await jobInfraFor(stack, "screening", "resilience-sigkill-admission", 3_000));
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
  });

  it("every creation is answered (200, 409 or a classified retryable error); retried projects each get their job; every accepted job completes with every paper once", async () => {
    const papers = screeningPapers(PAPERS);
    const create = (projectId: number) => stack.http("POST", "/v1/screening/jobs", { papers, project_id: projectId, mock: true });
    const projects = Array.from({ length: PROJECTS }, (_, i) => 4200 + i);
    // Freeze one replica the moment the first job's state is written, whatever admission it is in
    // the middle of, then kill it. Admissions are quick since the gateway stages large lists, so a
    // bare kill can land between two of them; while the replica is frozen NATS still routes about
    // half of the burst to it, so the kill is certain to catch admissions in flight.
    const watcher = await infra.registry.kv.watch({ key: "job.*" });
    const firstWrite = (async () => {
      for await (const entry of watcher) if (entry.operation === "PUT") return;
    })();
    const burst = Promise.all(projects.map(async (p) => ({ projectId: p, res: await create(p) })));
    const [victim] = alive(stack, "screening");
    await firstWrite;
    watcher.stop();
    victim!.child.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    await stack.stopProcess(victim!, "SIGKILL");
    const first = await burst;

    const statuses = first.map((f) => f.res.status);
    console.log(`[sigkill/admission] first round: ${JSON.stringify(countBy(statuses))}`);
    expect(statuses.some((s) => s !== 200), "the kill caught no admission in flight").toBe(true);
    for (const { res } of first) {
      if (res.status === 200) continue;
      expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(500);
      expect(classifiedRetryable(res), JSON.stringify(res.body)).toBe(true);
    }

    // A client retries what failed. A retry may meet the job its lost request created (409 naming
    // it: that job runs), or a half-admitted job whose command was never queued: the next creation
    // after JOB_ORPHAN_LEASE_MS reaps it as an orphan and is admitted. Retry until the project has
    // an accepted job, or the job a 409 named has completed.
    const accepted = new Map<number, Set<string>>();
    const named = new Map<number, Set<string>>();
    const note = (map: Map<number, Set<string>>, p: number, id: string) => map.set(p, (map.get(p) ?? new Set()).add(id));
    for (const { projectId, res } of first) if (res.status === 200) note(accepted, projectId, res.body.job_id);
    const retries = first.filter((f) => f.res.status !== 200).map((f) => f.projectId);
    await Promise.all(
      retries.map((projectId) =>
        waitFor(async () => {
          const r = await create(projectId);
          if (r.status === 200) return note(accepted, projectId, r.body.job_id);
          if (r.status !== 409) return null;
          const holder = /job_id ([0-9a-f-]{36})/.exec(r.body.detail)![1]!;
          note(named, projectId, holder);
          return (await infra.registry.get(holder))?.state.status === "completed" ? holder : null;
        }, 45_000, 1_000),
      ),
    );

    // Every accepted job completes; every job a 409 named ends too (completed, or reaped as an
    // orphan), or never existed beyond its project lock (a crash before its state was written).
    const acceptedIds = [...accepted.values()].flatMap((set) => [...set]);
    const namedIds = [...named.values()].flatMap((set) => [...set]).filter((id) => !acceptedIds.includes(id));
    for (const id of acceptedIds) {
      const state = await terminalState(infra, id, 60_000);
      expect(state.status, state.error ?? "").toBe("completed");
    }
    for (const id of namedIds) {
      const state = await waitFor(async () => {
        const entry = await infra.registry.get(id);
        return !entry ? "absent" : isTerminal(entry.state) ? entry.state : null;
      }, 60_000, 100);
      if (state !== "absent") expect(state.status === "completed" || state.error_category === "orphan_cleanup", JSON.stringify(state)).toBe(true);
    }
    const finals = (await Promise.all([...acceptedIds, ...namedIds].map(async (id) => (await infra.registry.get(id))?.state))).filter((s) => s !== undefined);
    // No project ever had two active jobs at once, and each ended up with a completed one.
    for (const projectId of projects) {
      const jobs = finals.filter((f) => f.project_id === projectId).sort((a, b) => a.created_at.localeCompare(b.created_at));
      for (let i = 1; i < jobs.length; i++) expect(jobs[i]!.created_at >= jobs[i - 1]!.completed_at!, `project ${projectId}`).toBe(true);
      expect(jobs.some((j) => j.status === "completed"), `project ${projectId}`).toBe(true);
    }
    // Every paper once in a completed job (read once through the gateway: the job then leaves the registry).
    const sample = finals.filter((f) => f.status === "completed").slice(0, 4);
    for (const job of sample) {
      const poll = await stack.http("GET", `/v1/screening/jobs/${job.job_id}`);
      expect(poll.status).toBe(200);
      expect(poll.body.results.map((r: { id: string }) => r.id)).toEqual(papers.map((p) => p.id));
    }
    console.log(
      `[sigkill/admission] all settled ${Date.now() - t0} ms after the kill; ${retries.length} retried; ${acceptedIds.length} accepted, ${namedIds.length} more named by a 409; ` +
        `${finals.filter((f) => f.status === "failed").length} reaped as orphans`,
    );
  });
});

function countBy(values: (string | number)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
