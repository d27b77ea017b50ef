import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CONFIG_BUCKET,
  configKeys,
  jobKind,
  JOB_SERVICES,
  operations,
  ReplyEnvelope,
  ServiceHealth,
  subjects,
  type BackendService,
  type IndexerField,
  type Operation,
} from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { NatsLink, type NatsConnection } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { screeningPapers } from "../e2e/screening-fixtures";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { alive, logLines, sleep, terminalState, type Svc } from "./support";

/**
 * A malformed message on any subject the services consume is rejected and logged, and the
 * consumer keeps going (Build 6): request-reply operations (not JSON, wrong shape, binary, no
 * reply subject, unknown operation), the health broadcast, job commands on the JetStream work
 * queues, checkpoints and the configuration bucket. Messages are published with a raw NATS
 * connection, as a misbehaving client or another version would.
 */

const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
const SERVICES: Svc[] = ["criteria", "screening", "indexer"];
const encoder = new TextEncoder();
const decoder = new TextDecoder();

describe("malformed messages on every consumed subject", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let link: NatsLink;
  let nc: NatsConnection;
  let infra: Record<"screening" | "indexer", JobInfra>;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 60, respond: extractionResponder() });
    stack = await startStack({
      services: { criteria: 1, screening: 1, indexer: 1 },
      env: { OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url, INDEXER_JOB_RECORD_CONCURRENCY: "2", ALLOWED_MODELS: "llm-after-garbage" },
    });
    link = new NatsLink({ servers: stack.natsUrl, name: "resilience-malformed" });
    nc = await link.ready();
    infra = { screening: await openJobInfra(nc, "screening"), indexer: await openJobInfra(nc, "indexer") };
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
    await provider?.close();
  });

  const processOf = (service: Svc) => alive(stack, service)[0]!;
  const opsOf = (service: BackendService) => [...Object.values(operations), ...JOB_SERVICES.flatMap((s) => Object.values(jobKind(s).operations))].filter((op: Operation) => op.service === service);
  const request = async (subject: string, body: Uint8Array | string) => {
    const reply = await nc.request(subject, body, { timeout: 5_000 });
    return ReplyEnvelope.parse(JSON.parse(decoder.decode(reply.data)));
  };
  const everyProcessUp = () => stack.processes.every((p) => p.child.exitCode === null && p.child.signalCode === null);

  it("request-reply: every operation of every service answers garbage with a validation error and logs the rejection", async () => {
    const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x9f, 0x92, 0x96, 0xc3, 0x28]);
    for (const service of SERVICES) {
      const before = logLines(processOf(service), /"malformed request rejected"/).length;
      const ops = opsOf(service);
      expect(ops.length).toBeGreaterThan(0);
      for (const op of ops) {
        const subject = subjects.rpc(service, op.name);
        for (const body of ["{not json", "[1,2,3]", "42", "null", binary]) {
          const envelope = await request(subject, body);
          expect(envelope.ok, `${subject} ${String(body)}`).toBe(false);
          if (!envelope.ok) expect(envelope.error.category, `${subject} ${String(body)}`).toBe("validation");
        }
        // Nobody waits for an answer: ignored (no job admitted, nothing run), and logged.
        nc.publish(subject, encoder.encode("{}"));
      }
      const unknown = await request(subjects.rpc(service, "no-such-operation"), "{}");
      expect(unknown).toMatchObject({ ok: false, error: { category: "not_found" } });

      const expected = before + ops.length * 6 + 1;
      await waitFor(() => logLines(processOf(service), /"malformed request rejected"/).length >= expected, 5_000);
      const lines = logLines(processOf(service), /"malformed request rejected"/).slice(before);
      expect(lines.some((l) => l.includes("body is not JSON"))).toBe(true);
      expect(lines.some((l) => l.includes("body breaks the contract"))).toBe(true);
      expect(lines.some((l) => l.includes("no reply subject"))).toBe(true);
      expect(lines.some((l) => l.includes("unknown operation"))).toBe(true);
      expect(lines.every((l) => !l.includes("{not json"))).toBe(true); // bodies are never logged
    }
    // The no-reply creations admitted nothing.
    expect(await infra.screening.registry.list()).toEqual([]);
    expect(await infra.indexer.registry.list()).toEqual([]);
    expect(everyProcessUp()).toBe(true);

    // Valid requests are served as before.
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Q?", mock: true });
    expect(res.status).toBe(200);
  });

  it("the health broadcast ignores a body and keeps answering", async () => {
    nc.publish(subjects.health(), encoder.encode("garbage without a reply subject"));
    const answers: ServiceHealth[] = [];
    for await (const msg of await nc.requestMany(subjects.health(), encoder.encode("\u0000garbage{"), { strategy: "timer", maxWait: 500 })) {
      answers.push(ServiceHealth.parse(JSON.parse(decoder.decode(msg.data))));
    }
    expect(answers.map((a) => a.service).sort()).toEqual(["criteria", "indexer", "screening"]);
    const ready = await stack.http("GET", "/health/ready", undefined, { auth: false });
    expect(ready.body.checks["service:screening"]).toMatch(/^ok/);
  });

  it("job commands: garbage, wrong shapes and commands for unknown jobs are discarded with a log line; the queues keep going", async () => {
    for (const service of ["screening", "indexer"] as const) {
      const { names, js } = infra[service];
      const junk = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      await js.publish(names.commandSubject(junk[0]!), encoder.encode("\u0000not json at all"));
      await js.publish(names.commandSubject(junk[1]!), encoder.encode(JSON.stringify({ type: "job.run", job_id: 7 })));
      await js.publish(names.commandSubject(junk[2]!), encoder.encode("[]"));
      // Well-formed, but for a job nobody admitted.
      const orphanCommand = { version: 1, type: "job.run", service, job_id: junk[3], submitted_at: new Date().toISOString(), input: null, sealed_provider_key: null, params: {} };
      await js.publish(names.commandSubject(junk[3]!), encoder.encode(JSON.stringify(orphanCommand)));

      const worker = processOf(service);
      await waitFor(() => logLines(worker, /"malformed job command discarded"/).length >= 3, 10_000);
      await waitFor(() => logLines(worker, /"job command has no live state/).length >= 1, 10_000);
      // Each was removed from the work queue rather than redelivered forever.
      await waitFor(async () => (await Promise.all(junk.map((id) => infra[service].queue.isQueued(id)))).every((q) => !q), 10_000);
    }

    // Valid jobs on both queues still run to the end.
    const screening = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(10), mock: true });
    const records = indexerRecords(4, { withAbstractOnly: true });
    const indexer = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS });
    expect((await terminalState(infra.screening, screening.body.job_id, 30_000)).status).toBe("completed");
    expect((await terminalState(infra.indexer, indexer.body.job_id, 30_000)).status).toBe("completed");
    expect(everyProcessUp()).toBe(true);
  });

  it("checkpoints: a garbage message on a running job's checkpoint subject is skipped by polls and by the job", async () => {
    provider.setBehaviour({ latencyMs: 250 });
    const records = indexerRecords(24, { withAbstractOnly: true });
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS });
    expect(created.status).toBe(200);
    const id = created.body.job_id as string;
    await waitFor(async () => (await stack.http("GET", `/v1/indexer/jobs/${id}`)).body?.partial_results?.length >= 2, 30_000, 100);
    const { js, names } = infra.indexer;
    await js.publish(names.checkpointSubject(id, "extraction", "garbage"), encoder.encode("{{{ not a checkpoint"));
    await js.publish(names.checkpointSubject(id, "extraction", "wrong-shape"), encoder.encode(JSON.stringify({ hello: "world" })));

    const poll = await stack.http("GET", `/v1/indexer/jobs/${id}`);
    expect(poll.status, JSON.stringify(poll.body).slice(0, 300)).toBe(200);
    const final = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/indexer/jobs/${id}`);
      expect(res.status).toBe(200);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : null;
    }, 60_000, 200);
    expect(final.status, final.error).toBe("completed");
    expect(final.partial_results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));
    provider.setBehaviour({ latencyMs: 60 });
  });

  it("configuration bucket: a value that is not configuration is ignored and logged; the watch keeps applying later changes", async () => {
    const criteria = processOf("criteria");
    const subject = `$KV.${CONFIG_BUCKET}.${configKeys.overrides("criteria")}`; // a raw KV put, as any client could make
    await nc.request(subject, encoder.encode("<<< definitely not json"), { timeout: 5_000 });
    await waitFor(() => logLines(criteria, /"malformed configuration entry ignored"/).length >= 1, 10_000);
    await nc.request(subject, encoder.encode(JSON.stringify({ temperature: "hot", extra: 5 })), { timeout: 5_000 });
    await waitFor(() => logLines(criteria, /"malformed configuration entry ignored"/).length >= 2, 10_000);
    await sleep(200);
    expect(everyProcessUp()).toBe(true);

    // The configuration API still works, and a proper change reaches the running service.
    const current = await stack.http("GET", "/v1/config/services/criteria");
    expect(current.status).toBe(200);
    const put = await stack.http("PUT", "/v1/config/services/criteria", { model: "llm-after-garbage" });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await waitFor(() => criteria.output().includes('"model":"llm-after-garbage"'), 10_000);
  });
});
