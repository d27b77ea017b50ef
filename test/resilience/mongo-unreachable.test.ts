import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IndexerField } from "@litrev/contracts";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { extractionResponder } from "../../services/indexer/src/testing/responder";
import { screeningPapers } from "../e2e/screening-fixtures";
import { indexerRecords } from "../support/dataset";
import { startStack, waitFor, type Stack } from "../support/stack";
import { alive, logLines } from "./support";

/**
 * MongoDB unreachable at start-up (Build 6): the job services start anyway, run jobs without
 * persistence, and readiness says `degraded` with the database check failing; nothing crashes.
 */

// A closed port: nothing listens on port 1, so every connection attempt is refused at once.
const UNREACHABLE = "mongodb://127.0.0.1:1/litrev?serverSelectionTimeoutMS=1000";
const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];

describe("MongoDB unreachable at start-up", () => {
  let provider: FakeProvider;
  let stack: Stack;

  beforeAll(async () => {
    provider = await startFakeProvider({ latencyMs: 20, respond: extractionResponder() });
    stack = await startStack({
      services: { screening: 1, indexer: 1 },
      env: { MONGO_URL: UNREACHABLE, OPENAI_API_KEY: "sk-resilience", OPENAI_BASE_URL: provider.url },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("screening and indexer start, say so in their logs, and readiness is 503 degraded with the database check failing", async () => {
    for (const service of ["screening", "indexer"] as const) {
      const [process] = alive(stack, service);
      expect(process, `${service} is running`).toBeDefined();
      expect(logLines(process!, /MongoDB is unreachable: continuing without persistence/)).toHaveLength(1);
      expect(process!.output()).not.toContain("127.0.0.1:1/litrev?"); // the URL itself is not logged
    }
    const ready = await waitFor(async () => {
      const res = await stack.http("GET", "/health/ready", undefined, { auth: false });
      return res.body?.checks?.["service:indexer"] && res.body?.checks?.["service:screening"] ? res : null;
    }, 10_000, 200);
    expect(ready.status).toBe(503);
    expect(ready.body.status).toBe("degraded");
    expect(ready.body.checks.database).toMatch(/^error/);
    expect(ready.body.checks.database).toMatch(/unreachable/);
    expect(ready.body.checks.nats).toBe("ok");
    expect((await stack.http("GET", "/health", undefined, { auth: false })).status).toBe(200);
  });

  it("runs screening and indexer jobs without persistence (finished screening job readable once, listings empty)", async () => {
    const screening = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(30), mock: true, project_id: 5501 });
    expect(screening.status).toBe(200);
    const records = indexerRecords(10, { withAbstractOnly: true });
    const indexer = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS, project_id: 5501 });
    expect(indexer.status).toBe(200);

    const doneScreening = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${screening.body.job_id}`);
      return res.body?.status === "completed" ? res : null;
    }, 60_000, 200);
    expect(doneScreening.body.results).toHaveLength(30);
    expect((await stack.http("GET", `/v1/screening/jobs/${screening.body.job_id}`)).status).toBe(404); // no storage to read it from again

    const doneIndexer = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/indexer/jobs/${indexer.body.job_id}`);
      return res.body?.status === "completed" ? res : null;
    }, 60_000, 200);
    expect(doneIndexer.body.partial_results.map((r: { ID: string }) => r.ID)).toEqual(records.map((r) => r.ID));

    for (const path of ["/v1/screening/jobs", "/v1/indexer/jobs"]) {
      const list = await stack.http("GET", path);
      expect(list.status).toBe(200);
      expect(list.body).toEqual([]);
    }
    // No crash, no error logged for the missing database beyond the start-up warning.
    for (const p of stack.processes) {
      expect(p.child.exitCode, p.name).toBeNull();
      expect(logLines(p, /"level":(50|60)/), p.name).toEqual([]);
    }
  });
});
