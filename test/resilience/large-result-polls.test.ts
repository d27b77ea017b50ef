import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, type JobInfra } from "../../libs/jobs/src";
import { CRITERIA, screeningPapers } from "../e2e/screening-fixtures";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";

const PAPERS = 20_000;
const REPETITIONS = 20;
const POLLS = 40;

/**
 * Many clients polling one finished, very large job at once through two gateways: every poll
 * answers with the whole result, streamed by the gateways from the job's artifact (written by the
 * worker that finished it), none fails or hangs. The second round
 * is printed beside a bare node server sending the same bytes to as many clients. Concurrent reads of one job's results
 * are shared per service process (libs/jobs JobReader), as reads of one object are (JobData): an
 * earlier design read the 16 MB result once per poll and deleted it under the other readers, and
 * 36 of 40 polls hung.
 */
describe(`${POLLS} concurrent polls of a finished ${PAPERS.toLocaleString("en")}-paper × ${REPETITIONS} mock job`, () => {
  let stack: Stack;
  let link: NatsLink;
  let infra: JobInfra;

  beforeAll(async () => {
    // One key polls the large job from many connections at once: the per-client cap on heavy reads
    // (docs/limits.md) would refuse most of them, and this suite is about the readers, not the limits.
    stack = await startStack({ gateways: 2, services: { screening: 1 }, env: { KEY_HEAVY_CONCURRENCY: "0" } });
    link = new NatsLink({ servers: stack.natsUrl, name: "resilience-large-polls" });
    infra = await openJobInfra(await link.ready(), "screening");
  });
  afterAll(async () => {
    await link?.close();
    await stack?.stop();
  });

  it("every poll gets the whole result, none fails or hangs", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, repetitions: REPETITIONS, mock: true });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    const id = created.body.job_id as string;
    // Wait without polling through a gateway: the first round is the gateways' first read of the job.
    const final = await waitFor(async () => {
      const state = (await infra.registry.get(id))?.state;
      return state && state.status !== "pending" && state.status !== "running" ? state : null;
    }, 150_000, 250);
    expect(final.status, final.error ?? "").toBe("completed");
    expect(final.releasable).toBe(true); // the results are in the job's artifact
    console.log(`[large-polls] job done after ${final.duration_ms} ms`);

    let kept: Buffer | undefined;
    const round = async (url: (i: number) => string) => {
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: POLLS }, async (_, i) => {
          const t0 = Date.now();
          try {
            const res = await fetch(url(i), { headers: { "x-api-key": TEST_API_KEY }, signal: AbortSignal.timeout(45_000) });
            const bytes = Buffer.from(await res.arrayBuffer());
            // Only the first answer is kept whole: 40 × 16 MB held by this process would slow the rounds after.
            if (i === 0) kept ??= bytes;
            return { status: res.status, sha: createHash("sha256").update(bytes).digest("hex"), error: res.status === 200 ? "" : bytes.toString("utf8", 0, 200), ms: Date.now() - t0 };
          } catch (error) {
            return { status: 0, sha: "", error: String(error), ms: Date.now() - t0 };
          }
        }),
      );
      return { answers, elapsed: Date.now() - started };
    };
    const pollUrl = (i: number) => `${stack.gatewayUrls[i % 2]!}/v1/screening/jobs/${id}`;
    const first = await round(pollUrl);
    // Concurrent polls of one job share each chunk read (the gateway's bounded chunk cache); later rounds find them cached.
    const later = await round(pollUrl);
    const cached = await round(pollUrl);
    const bytes = kept!;
    const bare = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json; charset=utf-8" }).end(bytes));
    await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
    const baseline = await round(() => `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`);
    await new Promise((resolve) => bare.close(resolve));
    const rounds = [
      ["first round (artifact, first read by each gateway)", first],
      ["second round (artifact, chunks cached)", later],
      ["third round (artifact, chunks cached)", cached],
      ["bare node server, same bytes", baseline],
    ] as const;
    for (const [name, r] of rounds) {
      console.log(`[large-polls] ${name}: ${POLLS} polls of ${(bytes.length / 1e6).toFixed(1)} MB in ${r.elapsed} ms; statuses ${JSON.stringify(count(r.answers.map((a) => a.status)))}; slowest ${Math.max(...r.answers.map((a) => a.ms))} ms`);
    }
    const answers = [...first.answers, ...later.answers, ...cached.answers];
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s !== 200), JSON.stringify(answers.filter((a) => a.status !== 200).map((a) => a.error)).slice(0, 500)).toEqual([]);
    // Every answer is the same bytes.
    expect(new Set(answers.map((a) => a.sha)).size).toBe(1);
    const body = JSON.parse(bytes.toString("utf8")) as { results: { votes: unknown[] }[] };
    expect(body.results).toHaveLength(PAPERS);
    expect(body.results[0]!.votes).toHaveLength(REPETITIONS);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(30_000);
  }, 240_000);
});

function count(values: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
