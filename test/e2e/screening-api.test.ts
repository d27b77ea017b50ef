import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costUsd } from "@litrev/llm";
import { startFakeProvider, type FakeChatRequest, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { http, startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, schemaNameOf, screeningPapers, screeningResponder } from "./screening-fixtures";

const SERVER_KEY = "sk-screening-e2e-server";
const STAGES = ["", "labelling", "reasoning", "clustering", "assignment", "Complete"];
const CONFIG_KEYS = ["clusters_type", "criteria_count", "mock", "model", "papers_count", "repetitions", "threshold"];

describe("AI screening through the gateway (2 gateways, 2 screening replicas, real nats-server, fake provider)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;
  let gw2: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => ReturnType<Stack["http"]>;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 0, respond: screeningResponder() });
    stack = await startStack({
      gateways: 2,
      services: { screening: 2 },
      env: {
        OPENAI_API_KEY: SERVER_KEY,
        OPENAI_BASE_URL: provider.url,
        JOB_ACK_WAIT_MS: "5000",
        LLM_MAX_ATTEMPTS: "2",
        LLM_CONCURRENCY: "4",
      },
    });
    gw2 = (method, path, body, headers) => http(stack.gatewayUrls[1]!, method, path, body, { headers: headers ?? {} });
    link = new NatsLink({ servers: stack.natsUrl, name: "screening-api-test" });
    infra = await openJobInfra(await link.ready(), "screening");
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  /** Polls until the job is terminal; returns that (first terminal) poll and every body seen. */
  async function pollToEnd(jobId: string, via = stack.http, intervalMs = 20) {
    const seen: Record<string, unknown>[] = [];
    const final = await waitFor(
      async () => {
        const res = await via("GET", `/v1/screening/jobs/${jobId}`);
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
        seen.push(res.body);
        return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
      },
      90_000,
      intervalMs,
    );
    return { final, seen };
  }

  /** Waits, without polling through the gateway (which would consume a terminal job), until the live state is terminal. */
  const settled = (jobId: string) =>
    waitFor(async () => {
      const entry = await infra.registry.get(jobId);
      return entry && (entry.state.status === "completed" || entry.state.status === "failed") ? entry.state : null;
    }, 90_000, 50);

  it("estimates with the spec's formula and the model's price", async () => {
    const res = await stack.http("POST", "/v1/screening/estimate", { papers_count: 100, criteria_count: 3 });
    expect(res.status).toBe(200);
    const input = (200 + 30 * 3) * 100 * 5 + 300 * 100;
    const output = 10 * 100 * 5 + 100 * 100;
    expect(res.body).toMatchObject({
      estimated_input_tokens: input,
      estimated_output_tokens: output,
      model: "llm-5-nano",
      papers_count: 100,
      repetitions: 5,
      confidence: "approximate",
    });
    expect(res.body.estimated_cost_usd).toBeCloseTo(costUsd({ model: "llm-5-nano", inputTokens: input, outputTokens: output }), 6);
    expect(res.body.disclaimer).toMatch(/30%/);
  });

  it("rejects invalid bodies with the field-level validation body", async () => {
    const res = await stack.http("POST", "/v1/screening/jobs", { criteria: [] });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContainEqual({ type: "missing", loc: ["body", "papers"], msg: "Field required" });
  });

  it("enforces the cost ceiling with a simple detail (not for mock jobs)", async () => {
    const papers = screeningPapers(1000).map((p) => ({ ...p, abstract: "" }));
    const res = await stack.http("POST", "/v1/screening/jobs", { papers, max_estimated_cost_usd: 0.0001 });
    expect(res.status).toBe(400);
    expect(typeof res.body.detail).toBe("string");
    expect(res.body.detail).toMatch(/\$0\.\d+/);
    expect(res.body.detail).toContain("0.0001");
    expect(res.body.detail).toContain("1000 papers");
    expect(res.body.detail).toContain("5 repetitions");
    const mock = await stack.http("POST", "/v1/screening/jobs", { papers: papers.slice(0, 20), max_estimated_cost_usd: 0.0000001, mock: true });
    expect(mock.status).toBe(200);
    await pollToEnd(mock.body.job_id);
  });

  it("runs a mock job: found at once on the other gateway, spec-shaped, deterministic, readable again from the store of record", async () => {
    const request = { papers: screeningPapers(40), criteria: CRITERIA, threshold: 2, clusters_type: "include", mock: true, project_id: 1001 };
    const created = await stack.http("POST", "/v1/screening/jobs", request);
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ job_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "pending", progress: 0, stage: "" });
    const id = created.body.job_id as string;

    const first = await gw2("GET", `/v1/screening/jobs/${id}`);
    expect(first.status).toBe(200);
    expect(first.body.job_id).toBe(id);
    expect(first.body.model_version).toBe("llm-5-nano");
    expect(typeof first.body.estimated_cost_usd).toBe("number");
    expect(Object.keys(first.body.config).sort()).toEqual(CONFIG_KEYS);
    expect(first.body.config).toMatchObject({ model: "llm-5-nano", repetitions: 5, threshold: 2, clusters_type: "include", mock: true, papers_count: 40, criteria_count: 4 });

    const { final } = first.body.status === "completed" ? { final: first.body } : await pollToEnd(id, gw2);
    expect(final).toMatchObject({ status: "completed", progress: 1, stage: "Complete", error: null, model_version: "llm-5-nano" });
    expect(Object.keys(final.stage_timings).sort()).toEqual(["assignment", "clustering", "labelling", "reasoning"]);
    expect(final.duration_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(final.completed_at)).toBeGreaterThanOrEqual(Date.parse(final.created_at));

    const results = final.results as Record<string, any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(results.map((r) => r.id)).toEqual(request.papers.map((p) => p.id));
    for (const r of results) {
      expect(Number.isInteger(r.final_score) && r.final_score >= 0 && r.final_score <= 5).toBe(true);
      expect(r.final_score).toBe(r.votes.filter((v: string) => v === "include").length);
      expect(r.decision).toBe(r.final_score >= 2 ? "include" : "exclude");
      expect(r.reasoning).toMatch(/placeholder/i);
      expect(r.criteria_verdicts).toHaveLength(4);
      if (r.decision === "exclude") expect(r.cluster_id).toBe(-1);
      else expect(r.cluster_id).toBeGreaterThanOrEqual(0);
    }
    const included = results.filter((r) => r.decision === "include").length;
    expect(included).toBeGreaterThan(0);
    expect(final.clusters.reduce((sum: number, c: { count: number }) => sum + c.count, 0)).toBe(included);
    for (const c of final.clusters) expect(c.label).toMatch(/placeholder/i);

    // Terminal jobs leave the live registry on their first poll; later polls read the store of record.
    for (const poll of [stack.http, gw2, stack.http]) {
      const again = await poll("GET", `/v1/screening/jobs/${id}`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(final);
    }

    // Same input, same output.
    const twin = await stack.http("POST", "/v1/screening/jobs", { ...request, project_id: 1002 });
    const { final: twinFinal } = await pollToEnd(twin.body.job_id);
    const strip = (items: Record<string, unknown>[]) => items.map(({ id: _id, ...rest }) => rest);
    expect(strip(twinFinal.results)).toEqual(strip(results));
    expect(twinFinal.clusters).toEqual(final.clusters);
  });

  it("lists jobs newest first from the store of record (embedded: no database configured)", async () => {
    const res = await stack.http("GET", "/v1/screening/jobs?limit=5");
    expect(res.status).toBe(200);
    expect(res.body.length).toBeGreaterThan(0);
    expect(res.body.length).toBeLessThanOrEqual(5);
    const created = res.body.map((j: { created_at: string }) => j.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(res.body[0]).toMatchObject({ project_name: null, model: expect.any(String), papers_count: expect.any(Number) });
    expect((await stack.http("GET", "/v1/screening/jobs?limit=0")).status).toBe(400);
  });

  it("runs a live job: stages in order, progress never backwards, active job and 409 while it runs, n votes per request", async () => {
    provider.reset();
    provider.setBehaviour({ latencyMs: 250 });
    const projectId = 3003;
    const papers = screeningPapers(60, { tagTitles: true });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, questions: ["Do nudges change clinicians' behaviour?"], project_id: projectId });
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;

    const active = await waitFor(async () => {
      const res = await gw2("GET", `/v1/screening/active-job?project_id=${projectId}`);
      return res.body?.status === "running" ? res : null;
    });
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({ job_id: id, results: null, clusters: null, model_version: "llm-5-nano" });
    const second = await gw2("POST", "/v1/screening/jobs", { papers: papers.slice(0, 3), project_id: projectId, mock: true });
    expect(second.status).toBe(409);
    expect(second.body.detail).toContain(id);
    expect(second.body.detail).toMatch(/running|pending/);
    expect((await stack.http("GET", "/v1/screening/active-job?project_id=999999")).body).toBeNull();

    const { final, seen } = await pollToEnd(id, stack.http, 25);
    expect(final.status, final.error).toBe("completed");
    const progress = seen.map((s) => s.progress as number);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
    const stages = [...new Set(seen.map((s) => s.stage as string))];
    expect(stages.map((s) => STAGES.indexOf(s))).toEqual([...stages.map((s) => STAGES.indexOf(s))].sort((a, b) => a - b));
    expect(stages).toContain("labelling");
    expect(stages).toContain("reasoning");
    expect(final.results).toHaveLength(60);
    expect(new Set(final.results.map((r: { final_score: number }) => r.final_score)).size).toBeGreaterThan(1);
    expect(final.clusters.length).toBeGreaterThan(0);
    expect(final.clusters.every((c: { description: string }) => typeof c.description === "string")).toBe(true);
    expect(final.clusters.reduce((s: number, c: { count: number }) => s + c.count, 0)).toBe(60); // no clusters_type: every paper

    const labelling = provider.chatRequests().map((r) => r.body as FakeChatRequest).filter((b) => schemaNameOf(b).startsWith("screening_labels_"));
    expect(labelling).toHaveLength(6); // 60 papers, 10 per call (SCREENING_LABEL_BATCH), the 5 votes sampled with n in one request
    for (const body of labelling) {
      expect(body.n).toBe(5);
      expect(body.response_format?.json_schema?.strict).toBe(true);
      const system = String(body.messages[0]?.content);
      expect(system).toContain(CRITERIA[0]!.value); // criteria in the fixed prefix …
      expect(String(body.messages[1]?.content)).toMatch(/^Papers to screen \(10\):\n<<<DATA papers>>>\n\{"id":"p1","title":"p\d+:/); // … papers last, as data
    }
    expect((await gw2("GET", `/v1/screening/active-job?project_id=${projectId}`)).body).toBeNull();
    provider.setBehaviour({ latencyMs: 0 });
  });

  it("admits exactly one of 50 concurrent creations for a project across two gateways", async () => {
    provider.setBehaviour({ latencyMs: 200 });
    const projectId = 5005;
    const papers = screeningPapers(20);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        http(stack.gatewayUrls[i % 2]!, "POST", "/v1/screening/jobs", { papers, project_id: projectId }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    const conflicts = answers.filter((a) => a.status === 409);
    expect(ok).toHaveLength(1);
    expect(conflicts).toHaveLength(49);
    const winner = ok[0]!.body.job_id as string;
    for (const c of conflicts) expect(c.body.detail).toContain(winner);
    const state = await settled(winner);
    expect(state.status).toBe("completed");
    provider.setBehaviour({ latencyMs: 0 });
  });

  it("reads never change stored state: active-job, list and polls leave a finished job's live entry to the sweep", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(10), mock: true, project_id: 6006 });
    const state = await settled(created.body.job_id);
    expect(state.status).toBe("completed");
    expect((await stack.http("GET", "/v1/screening/active-job?project_id=6006")).body).toBeNull();
    const listed = (await gw2("GET", "/v1/screening/jobs?limit=100")).body.find((j: { job_id: string }) => j.job_id === created.body.job_id);
    expect(listed).toMatchObject({ status: "completed", project_id: 6006, papers_count: 10 });
    // No read released the live entry, a poll neither: polls are answered from the job's artifact,
    // and the owning service's sweep releases the entry once the artifact is in place (docs/jobs.md).
    expect((await infra.registry.get(created.body.job_id))?.state.status).toBe("completed");
    const first = await gw2("GET", `/v1/screening/jobs/${created.body.job_id}`);
    expect(first.status).toBe(200);
    expect(first.body.results).toHaveLength(10);
    expect((await infra.registry.get(created.body.job_id))?.state.status).toBe("completed");
    expect((await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`)).body).toEqual(first.body);
  });

  it("fails a job whose provider key is invalid with auth, not retryable, and never stores the key in clear", async () => {
    provider.setBehaviour({ validKeys: [SERVER_KEY], latencyMs: 300 });
    const clientKey = "sk-client-not-valid-9876543210";
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(5) }, { headers: { "x-llm-api-key": clientKey } });
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;
    // While it is queued or running, neither its command nor its live state holds the key in clear.
    const command = await infra.jsm.streams.getMessage(infra.names.commandStream, { last_by_subj: infra.names.commandSubject(id) }).catch(() => null);
    if (command) {
      expect(command.string()).not.toContain(clientKey);
      expect(command.json<{ sealed_provider_key: string }>().sealed_provider_key).toMatch(/^v2\.k0\./);
    }
    const live = await infra.registry.get(id);
    expect(JSON.stringify(live?.state ?? {})).not.toContain(clientKey);

    const { final } = await pollToEnd(id);
    expect(final).toMatchObject({ status: "failed", error_category: "auth", error_retryable: false, results: null });
    expect(final.error).not.toContain(clientKey);
    expect(final.completed_at).toBeTruthy();
    const used = provider.chatRequests().filter((r) => r.headers.authorization === `Bearer ${clientKey}`);
    expect(used.length).toBeGreaterThan(0);
    provider.setBehaviour({ validKeys: undefined, latencyMs: 0 });
  });

  it("rides out a provider that answers 429 longer than the bounded retries: the job completes, never fails on the rate limit", async () => {
    // 20 429s in a row: ten times a call's attempts (LLM_MAX_ATTEMPTS, 2 here).
    provider.reset();
    provider.setBehaviour({ mode: "always429", retryAfterMs: 50, modeTimes: 20 });
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3) });
    const { final } = await pollToEnd(created.body.job_id);
    expect(final).toMatchObject({ status: "completed" });
    expect(provider.chatRequests().filter((r) => r.status === 429)).toHaveLength(20);
    provider.setBehaviour({ mode: "normal" });
  });
});
