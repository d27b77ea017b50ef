import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsLink } from "@litrev/messaging";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { TEST_API_KEY, startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";

/**
 * Build 6 of the hardening issue: scoped service keys. A job belongs to the client whose key created
 * it: another client's key gets 404 for it (poll), does not see it in listings or active-job, and
 * its first poll of the finished job releases nothing. A `use` key may not change configuration.
 * The single `API_KEY` of the stack is the `default` owner's admin key, as before.
 */

const ALICE = "alice-admin-key-0123456789abcdef";
const BOB = "bob-use-only-key-0123456789abcdef";
const FIELDS = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA", examples: [], examples_mode: "guide", depth: "minimal" },
];

describe("scoped service keys and job ownership (real stack)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let screeningInfra: JobInfra;

  beforeAll(async () => {
    const screening = screeningResponder();
    const extraction = extractionResponder();
    // Slow enough that a 3-paper job stays running while the reads below look at it.
    provider = await startFakeProvider({ latencyMs: 1_000, respond: (request, context) => extraction(request) ?? screening(request, context) });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: {
        API_KEYS: `alice:admin:${ALICE},bob:use:${BOB}`,
        OPENAI_API_KEY: "sk-ownership-server",
        OPENAI_BASE_URL: provider.url,
        LLM_MAX_ATTEMPTS: "2",
      },
    });
    link = new NatsLink({ servers: stack.natsUrl, name: "ownership-test" });
    screeningInfra = await openJobInfra(await link.ready(), "screening");
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  const as = (key: string) => ({ headers: { "x-api-key": key } });
  const get = (key: string, path: string) => stack.http("GET", path, undefined, as(key));

  it("hides a running screening job from another client: poll 404, not listed, not its active job", async () => {
    const project = 7_001;
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 1, project_id: project }, as(ALICE));
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;

    const mine = await get(ALICE, `/v1/screening/jobs/${id}`);
    expect(mine.status).toBe(200);
    expect(mine.body.job_id).toBe(id);
    expect(["pending", "running"]).toContain(mine.body.status);
    expect(JSON.stringify(mine.body)).not.toContain("alice"); // the owner id is not part of any response

    for (const key of [BOB, TEST_API_KEY]) {
      const poll = await get(key, `/v1/screening/jobs/${id}`);
      expect(poll).toMatchObject({ status: 404, body: { detail: "Job not found" } });
      expect(await get(key, `/v1/screening/active-job?project_id=${project}`)).toMatchObject({ status: 200, body: null });
    }
    expect((await get(ALICE, `/v1/screening/active-job?project_id=${project}`)).body?.job_id).toBe(id);

    const own = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, project_id: project, mock: true }, as(ALICE));
    expect(own.status).toBe(409);
    expect(own.body.detail).toContain(id);

    // Bob's first poll of the finished job neither sees it nor changes it: Alice's poll finds it.
    await waitFor(async () => {
      const state = (await screeningInfra.registry.get(id))?.state;
      return state?.status === "completed" || state?.status === "failed" ? state : null;
    }, 90_000);
    expect((await get(BOB, `/v1/screening/jobs/${id}`)).status).toBe(404);
    expect(await screeningInfra.registry.get(id)).not.toBeNull();
    const finished = await get(ALICE, `/v1/screening/jobs/${id}`);
    expect(finished.status).toBe(200);
    expect(finished.body).toMatchObject({ job_id: id, status: "completed" });
    expect(finished.body.results).toHaveLength(3);
    // From the job's artifact, every time, still hers only.
    expect((await get(ALICE, `/v1/screening/jobs/${id}`)).body).toEqual(finished.body);
    expect((await get(BOB, `/v1/screening/jobs/${id}`)).status).toBe(404);

    const listedBy = async (key: string) => ((await get(key, "/v1/screening/jobs?limit=50")).body as { job_id: string }[]).map((j) => j.job_id);
    expect(await listedBy(ALICE)).toContain(id);
    expect(await listedBy(BOB)).not.toContain(id);
    expect(await listedBy(TEST_API_KEY)).not.toContain(id);
  });

  it("the project lock is per client: Alice, Bob and the single key each run a job for project 7; no 409, listing or active-job shows another's", async () => {
    const project = 7;
    const keys = { alice: ALICE, bob: BOB, single: TEST_API_KEY };
    const create = (key: string) => stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(3), criteria: CRITERIA, repetitions: 1, project_id: project }, as(key));
    // At once, as two clients that never heard of each other would.
    const created = await Promise.all(Object.values(keys).map(create));
    for (const res of created) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ids = Object.fromEntries(Object.keys(keys).map((name, i) => [name, created[i]!.body.job_id as string])) as Record<keyof typeof keys, string>;
    expect(new Set(Object.values(ids)).size).toBe(3);

    for (const [name, key] of Object.entries(keys) as [keyof typeof keys, string][]) {
      const others = Object.entries(ids).filter(([n]) => n !== name).map(([, id]) => id);
      // Each client's own second creation is refused, naming its own job only.
      const again = await create(key);
      expect(again.status).toBe(409);
      expect(again.body.detail).toContain(ids[name]);
      expect(again.body.detail).not.toMatch(/another service key/);
      for (const other of others) expect(again.body.detail).not.toContain(other);
      const active = await get(key, `/v1/screening/active-job?project_id=${project}`);
      expect(active.status).toBe(200);
      expect(active.body?.job_id).toBe(ids[name]);
      const listed = ((await get(key, "/v1/screening/jobs?limit=50")).body as { job_id: string }[]).map((j) => j.job_id);
      expect(listed).toContain(ids[name]);
      for (const other of others) {
        expect(listed).not.toContain(other);
        expect((await get(key, `/v1/screening/jobs/${other}`)).status).toBe(404);
      }
    }
    for (const id of Object.values(ids)) {
      await waitFor(async () => {
        const state = (await screeningInfra.registry.get(id))?.state;
        return state?.status === "completed" || state?.status === "failed" ? state : null;
      }, 90_000);
    }
  });

  it("lists and polls each client's own jobs only, for indexer jobs too (several per project)", async () => {
    const project = 7_002;
    const body = { records: indexerRecords(2, { withAbstractOnly: true }), fields: FIELDS, project_id: project };
    const alices = (await stack.http("POST", "/v1/indexer/jobs", body, as(ALICE))).body.job_id as string;
    const bobs = (await stack.http("POST", "/v1/indexer/jobs", body, as(BOB))).body.job_id as string;
    expect(alices).toBeTruthy();
    expect(bobs).toBeTruthy();
    // While both run, each client's active job of the project is its own.
    const activeOf = async (key: string) => (await get(key, `/v1/indexer/active-job?project_id=${project}`)).body?.job_id as string | undefined;
    const [aliceActive, bobActive] = await Promise.all([activeOf(ALICE), activeOf(BOB)]);
    expect(aliceActive).toBe(alices);
    expect(bobActive).toBe(bobs);

    expect((await get(BOB, `/v1/indexer/jobs/${alices}`)).status).toBe(404);
    expect((await get(ALICE, `/v1/indexer/jobs/${bobs}`)).status).toBe(404);
    for (const [key, id] of [
      [ALICE, alices],
      [BOB, bobs],
    ] as const) {
      const done = await waitFor(async () => {
        const res = await get(key, `/v1/indexer/jobs/${id}`);
        return res.body?.status === "completed" || res.body?.status === "failed" ? res.body : null;
      }, 90_000);
      expect(done.status).toBe("completed");
    }
    const listedBy = async (key: string) => ((await get(key, "/v1/indexer/jobs")).body as { job_id: string }[]).map((j) => j.job_id);
    const [aliceList, bobList] = await Promise.all([listedBy(ALICE), listedBy(BOB)]);
    expect(aliceList).toContain(alices);
    expect(aliceList).not.toContain(bobs);
    expect(bobList).toContain(bobs);
    expect(bobList).not.toContain(alices);
  });

  it("lets only admin keys change configuration; a use key still reads it", async () => {
    const patch = { temperature: 0.4 };
    const denied = await stack.http("PUT", "/v1/config/services/screening", patch, as(BOB));
    expect(denied).toMatchObject({ status: 403, body: { detail: { error_code: "auth", error_reason: "forbidden", retryable: false } } });
    expect((await stack.http("PUT", "/v1/config/models", { aliases: { "llm-5-nano": "gpt-x" } }, as(BOB))).status).toBe(403);
    expect((await get(BOB, "/v1/config/services/screening")).body.temperature).not.toBe(0.4);
    expect((await stack.http("PUT", "/v1/config/services/screening", patch, as(ALICE))).status).toBe(200);
    expect((await get(BOB, "/v1/config/services/screening")).body.temperature).toBe(0.4);
    // The single API_KEY is an admin key, exactly as before scoped keys existed.
    expect((await stack.http("PUT", "/v1/config/services/screening", { temperature: 1 }, as(TEST_API_KEY))).status).toBe(200);
    expect((await stack.http("PUT", "/v1/config/services/screening", patch, as("not-a-key-0123456789"))).status).toBe(401);
    const logs = stack.processes.map((p) => p.output()).join("\n");
    for (const key of [ALICE, BOB, TEST_API_KEY]) expect(logs).not.toContain(key);
  });
});
