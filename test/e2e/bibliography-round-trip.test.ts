import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importReferences, toScreeningPaper } from "@litrev/references";
import { checkRoundTrip, describeCounts, emptyCounts, FIXTURE_NAMES, FIXTURES } from "../support/bibliography-round-trip";
import { startStack, waitFor, type Stack } from "../support/stack";

/**
 * The library round trip through a running stack: every import fixture imported, screened (mock)
 * through the gateway with its bibliographic fields, exported as RIS and imported again; every field
 * equal, every decision there (test/support/bibliography-round-trip.ts).
 */
describe("bibliographic round trip through the gateway: import → screen (mock) → RIS export → import (issue 35)", () => {
  let stack: Stack;
  const counts = emptyCounts();

  beforeAll(async () => {
    stack = await startStack({ services: { screening: 1 } });
  }, 180_000);
  afterAll(async () => {
    console.log(`[bibliography round trip, gateway] ${describeCounts(FIXTURE_NAMES.length, counts)}`);
    await stack?.stop();
  });

  it.each(FIXTURE_NAMES)("%s: every field and every decision comes back", { timeout: 240_000 }, async (name) => {
    const imported = importReferences([{ name, text: readFileSync(join(FIXTURES, name), "utf8") }]).records;
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: imported.map(toScreeningPaper), criteria: [{ name: "Adults", type: "include", value: "Adults" }], repetitions: 1, mock: true });
    expect(created.status, JSON.stringify(created.body).slice(0, 500)).toBe(200);
    const id = created.body.job_id as string;
    const job = await waitFor(async () => {
      const res = await stack.http("GET", `/v1/screening/jobs/${id}`);
      return res.body.status === "completed" || res.body.status === "failed" ? res.body : undefined;
    }, 200_000, 500);
    expect(job.status).toBe("completed");
    const decisions = new Map((job.results as { id: string; decision: string }[]).map((r) => [String(r.id), r.decision]));
    const res = await fetch(`${stack.baseUrl}/v1/screening/jobs/${id}/export?format=ris`, { headers: { authorization: "Bearer test-service-key-0123456789" } });
    expect(res.status).toBe(200);
    checkRoundTrip(name, imported, await res.text(), decisions, counts);
  });
});
