import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { CRITERIA, screeningPapers } from "../e2e/screening-fixtures";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";

const PAPERS = 20_000;
const REPETITIONS = 20;
const POLLS = 40;

/**
 * Many clients polling one finished, very large job at once through two gateways, without MongoDB:
 * exactly one poll answers with the result (the job then leaves the live registry), every other
 * one answers 404 promptly. Before the fix (libs/jobs JobData) each poll read the 16 MB result
 * object on its own, and the poll that won deleted it while the others were still reading; the
 * NATS object reader waits forever for purged chunks, so 36 of 40 polls hung (> 45 s). Reads of one
 * object are now shared per process, and a stalled read ends with null once its object is gone.
 */
describe(`${POLLS} concurrent polls of a finished ${PAPERS.toLocaleString("en")}-paper × ${REPETITIONS} mock job`, () => {
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    stack = await startStack({ gateways: 2, services: { screening: 1 } });
    link = new NatsLink({ servers: stack.natsUrl, name: "resilience-large-polls" });
    infra = await openJobInfra(await link.ready(), "screening");
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
  });

  it("one poll gets the result, the rest a prompt 404, none fails or hangs", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: REPETITIONS, mock: true });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    const id = created.body.job_id as string;
    // Wait without polling through a gateway (the first poll of a finished job consumes it).
    const final = await waitFor(async () => {
      const state = (await infra.registry.get(id))?.state;
      return state && state.status !== "pending" && state.status !== "running" ? state : null;
    }, 150_000, 250);
    expect(final.status, final.error ?? "").toBe("completed");
    console.log(`[large-polls] job done after ${final.duration_ms} ms; result object ${(final.result!.bytes / 1e6).toFixed(1)} MB`);

    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: POLLS }, async (_, i) => {
        const t0 = Date.now();
        try {
          const res = await fetch(`${stack.gatewayUrls[i % 2]!}/v1/screening/jobs/${id}`, { headers: { "x-api-key": TEST_API_KEY }, signal: AbortSignal.timeout(45_000) });
          const text = await res.text();
          return { status: res.status, body: JSON.parse(text), ms: Date.now() - t0 };
        } catch (error) {
          return { status: 0, body: String(error), ms: Date.now() - t0 };
        }
      }),
    );
    const elapsed = Date.now() - started;
    const statuses = answers.map((a) => a.status);
    console.log(`[large-polls] ${POLLS} polls in ${elapsed} ms; statuses ${JSON.stringify(count(statuses))}; slowest ${Math.max(...answers.map((a) => a.ms))} ms`);
    const ok = answers.filter((a) => a.status === 200);
    expect(statuses.filter((s) => s !== 200 && s !== 404), JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 404).map((a) => a.body)).slice(0, 500)).toEqual([]);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.body.results).toHaveLength(PAPERS);
    expect(ok[0]!.body.results[0].votes).toHaveLength(REPETITIONS);
    for (const a of answers) if (a.status === 404) expect(a.body).toEqual({ detail: "Job not found" });
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(30_000);
  }, 240_000);
});

function count(values: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
