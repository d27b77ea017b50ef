import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { payloadBucket, type IndexerField } from "@litrev/contracts";
import { authOptions } from "@litrev/messaging";
import { openJobInfra } from "../../libs/jobs/src";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";

/**
 * The whole system against a locked-down nats-server (one user per process kind, permissions from
 * libs/messaging/src/permissions.ts, anonymous connections refused): every flow still works, and
 * the server logged no permission violation while it ran, so the permission table is complete.
 */

const SERVER_KEY = "sk-natslock-server";
/** A whole stack's start-up on a busy machine (each process may take up to a minute: test/support/stack.ts). */
const START_MS = 300_000;
const FIELDS: IndexerField[] = [
  { name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" },
  { name: "sample_size", description: "Participants", data_type_primary: "number", data_type_secondary: "count" },
];

describe("the system on a locked-down NATS (every process its own user and permissions)", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    const screening = screeningResponder();
    const extraction = extractionResponder();
    provider = await startFakeProvider({
      validKeys: [SERVER_KEY],
      latencyMs: 10,
      respond: (request, context) => screening(request, context) ?? extraction(request),
    });
    stack = await startStack({
      lockedNats: true,
      services: { criteria: 1, screening: 2, indexer: 1 },
      env: { OPENAI_API_KEY: SERVER_KEY, OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2", LLM_CONCURRENCY: "3", JOB_ACK_WAIT_MS: "5000" },
    });
  }, START_MS);
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  const violations = () =>
    readFileSync(stack.natsLogFile!, "utf8")
      .split("\n")
      .filter((line) => /Violation/.test(line))
      // The one refusal the quota test above provokes on purpose, as nats-server 2.15 words it
      // (`… - "$G/user:criteria" - Publish Violation - Subject "…"`; 2.9 said `Violation - User "criteria", Subject`).
      .filter((line) => !/"[^"]*\/user:criteria" - Publish Violation - Subject "\$JS\.API\.STREAM\.UPDATE\.KV_litrev_config"/.test(line));

  async function pollToEnd(path: string): Promise<Record<string, unknown>> {
    return waitFor(
      async () => {
        const res = await stack.http("GET", path);
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
        return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
      },
      90_000,
      50,
    );
  }

  it("reports every service ready through the health broadcast", async () => {
    const ready = await waitFor(async () => {
      const res = await stack.http("GET", "/health/ready", undefined, { auth: false });
      return res.status === 200 ? res : null;
    }, 30_000);
    expect(ready.status).toBe(200);
  });

  it("runs a mock screening job end to end with a body over the 512 KiB parking threshold", async () => {
    // ~300 papers of ~2,500 characters: the request is parked in the screening payload bucket.
    const papers = screeningPapers(300).map((p, i) => ({ ...p, abstract: `${p.abstract} ${"x".repeat(2_000)} ${i}` }));
    expect(JSON.stringify({ papers }).length).toBeGreaterThan(512 * 1024);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, mock: true, project_id: 77 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const jobId = created.body.job_id as string;
    const active = await stack.http("GET", "/v1/screening/active-job?project_id=77");
    expect(active.status).toBe(200);
    const final = await pollToEnd(`/v1/screening/jobs/${jobId}`);
    expect(final.status).toBe("completed");
    // Terminal: the first poll released it; the service answers from its store of record afterwards.
    const again = await stack.http("GET", `/v1/screening/jobs/${jobId}`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("completed");
    const listed = await stack.http("GET", "/v1/screening/jobs?limit=5");
    expect(listed.status).toBe(200);
    expect(listed.body.map((j: { job_id: string }) => j.job_id)).toContain(jobId);
  }, 120_000);

  it("runs an indexer job against the provider and a synchronous criteria call", async () => {
    const created = await stack.http("POST", "/v1/indexer/jobs", { records: indexerRecords(3), fields: FIELDS, project_id: 78 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const final = await pollToEnd(`/v1/indexer/jobs/${created.body.job_id}`);
    expect(final.status).toBe("completed");
    const picos = await stack.http("POST", "/v1/criteria/picos", { project_description: "Exercise and depression", mock: true });
    expect(picos.status).toBe(200);
  }, 120_000);

  it("hands a live screening job over from a worker stopped mid-run (SIGTERM) to the other, which resumes from checkpoints", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(120), criteria: CRITERIA, project_id: 79 });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const jobId = created.body.job_id as string;
    const running = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${jobId}`);
      return res.body.status === "running" && res.body.progress > 0 ? res.body : null;
    }, 60_000, 50);
    expect(running.status).toBe("running");
    // The job's state, read as the screening service's own user (the test holds no other key to it).
    const nc = await connect({ servers: stack.natsUrl, ...authOptions({ user: "screening", password: stack.natsCredentials!.screening }) });
    try {
      const infra = await openJobInfra(nc, "screening");
      const worker = (await infra.registry.get(jobId))!.state.worker!;
      const owner = stack.processes.find((p) => p.name === "screening" && p.child.exitCode === null && p.output().includes(worker));
      expect(owner, `the process running ${worker}`).toBeDefined();
      await stack.stopProcess(owner!, "SIGTERM");
      const resumed = await waitFor(async () => {
        const state = (await infra.registry.get(jobId))?.state;
        return state?.worker && state.worker !== worker ? state : null;
      }, 30_000, 50);
      expect(resumed.handoffs).toBeGreaterThanOrEqual(1);
      const final = await pollToEnd(`/v1/screening/jobs/${jobId}`);
      expect(final.status).toBe("completed");
    } finally {
      await nc.close();
    }
  }, 120_000);

  it("reads and patches configuration through the gateway (which may write only overrides)", async () => {
    const put = await stack.http("PUT", "/v1/config/services/criteria", { temperature: 0.3 });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const read = await stack.http("GET", "/v1/config/services/criteria");
    expect(read.body.temperature).toBe(0.3);
    expect((await stack.http("GET", "/v1/config/prompts")).status).toBe(200);
    const models = await stack.http("PUT", "/v1/config/models", { aliases: { "natslock-alias": "llm-5-mini" } });
    expect(models.status, JSON.stringify(models.body)).toBe(200);
  });

  it("starts a service whose quota differs from an existing bucket's: it may not update streams, so it warns and keeps going", async () => {
    const extra = await stack.startService("criteria", { NATS_QUOTA_CONFIG_MB: "8" });
    expect(extra.output()).toMatch(/stream KV_litrev_config: could not apply max_bytes=8388608/);
    const nc = await connect({ servers: stack.natsUrl, ...authOptions({ user: "criteria", password: stack.natsCredentials!.criteria }) });
    try {
      const info = await (await jetstreamManager(nc)).streams.info("KV_litrev_config");
      expect(info.config.max_bytes).toBe(16 * 1024 * 1024);
    } finally {
      await nc.close();
    }
    await stack.stopProcess(extra);
  });

  it("logged no permission violation while all of the above ran (and does log one when it happens)", async () => {
    expect(violations()).toEqual([]);
    // The check can see a violation: the gateway's user tries to read everything.
    const nc = await connect({ servers: stack.natsUrl, ...authOptions({ user: "gateway", password: stack.natsCredentials!.gateway }) });
    try {
      nc.subscribe(">");
      await waitFor(() => violations().length > 0, 10_000);
      expect(violations().join("\n")).toMatch(/Subscription Violation.*Subject ">"/);
    } finally {
      await nc.close();
    }
  });

  it("kept the large request inside the screening service's own size-limited buckets (the gateway staged its papers in the job data bucket)", async () => {
    const nc = await connect({ servers: stack.natsUrl, ...authOptions({ user: "screening", password: stack.natsCredentials!.screening }) });
    try {
      const jsm = await jetstreamManager(nc);
      const jobData = await jsm.streams.info("OBJ_litrev_jobdata_screening");
      expect(jobData.state.last_seq).toBeGreaterThan(0);
      expect(jobData.config.max_bytes).toBeGreaterThan(0);
      expect((await jsm.streams.info(`OBJ_${payloadBucket("screening")}`)).config.max_bytes).toBeGreaterThan(0);
    } finally {
      await nc.close();
    }
  });
});

describe("a locked-down gateway before any service has started", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ lockedNats: true, services: {} });
  }, START_MS);
  afterAll(async () => {
    await stack?.stop();
  });

  it("answers configuration reads with a retryable 503 (it may not create the services' bucket itself)", async () => {
    const res = await stack.http("GET", "/v1/config/services");
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: [{ id: "p1", title: "t", abstract: "a" }], mock: true });
    expect(created.status).toBe(503);
  });
});
