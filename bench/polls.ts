/**
 * Polls per second of running screening and indexer jobs through the gateway, each as a ratio to a
 * bare fastify hello-world route measured in the same run on the same machine (goal ≥ 0.6 for both
 * job kinds; p99 < 5 ms at 10 connections).
 *
 *   npm run bench -- polls        (knobs: BENCH_CONNECTIONS=10, BENCH_SECONDS=6, BENCH_ROUNDS=3)
 *
 * Starts a real stack (nats-server, one gateway, a screening and an indexer worker) and the fake
 * provider, which answers slowly so the polled jobs stay `running` for the whole run. Both job kinds
 * take the same path: a poll is served from the gateway's in-process mirror of the job-state
 * bucket (kept current by a KV watch), with its body serialised once per state revision: no NATS
 * hop per request. Runs alternate hello / poll so background noise hits both alike. The gateway
 * samples poll traces at OTEL_POLL_TRACE_RATIO (default 1%); a second gateway that traces every
 * poll is measured beside it, to show what a server span per poll costs.
 *
 * Finished 20-paper jobs are measured too, one fresh job per round, **its first poll included**: the
 * measured gateway has never read the job before the round starts (completion is awaited through
 * the second gateway), so the round's first poll reads the job's artifact from the job data bucket
 * and the rest are served from the gateway's bounded cache of artifacts, no NATS hop (goal ≥ 0.5×
 * hello; running polls ≥ 0.45×).
 */
import { startHelloServer } from "./support/hello";
import { knob } from "./support/knobs";
import { mean, measure, type Figures } from "./support/measure";
import { startFakeProvider } from "../libs/llm/src/testing/index";
import { freePort, spawnService, stopProcess, waitForPort } from "../scripts/lib/launch";
import { TEST_API_KEY, startStack, waitFor } from "../test/support/stack";
import { screeningPapers } from "../test/e2e/screening-fixtures";

const CONNECTIONS = knob("BENCH_CONNECTIONS", 10);
const SECONDS = knob("BENCH_SECONDS", 6);
const ROUNDS = knob("BENCH_ROUNDS", 3);

const provider = await startFakeProvider({ latencyMs: 60_000 });
const JOB_KEY_SECRET = "bench-polls-job-key-secret-0123456789";
const stack = await startStack({
  services: { screening: 1, indexer: 1 },
  env: { OPENAI_API_KEY: "sk-bench-polls", OPENAI_BASE_URL: provider.url, LLM_CONCURRENCY: "1", LLM_DEADLINE_MS: "600000", JOB_KEY_SECRET },
});
// A second gateway, identical except that it traces every poll: shows what one HTTP server span
// per poll costs (the only difference between the two rows).
const quietPort = await freePort();
const quiet = spawnService(
  "gateway",
  { NATS_URL: stack.natsUrl, API_KEY: TEST_API_KEY, JOB_KEY_SECRET, PORT: String(quietPort), HOST: "127.0.0.1", OTEL_POLL_TRACE_RATIO: "1" },
  { stdio: "ignore" },
);
await waitForPort(quietPort, 30_000, quiet);
const hello = await startHelloServer();
const helloUrl = `${hello.url}/hello`;
try {
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(50), criteria: [{ name: "p", type: "include", value: "Clinicians" }] });
  if (created.status !== 200) throw new Error(`job creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  const pollUrl = `${stack.baseUrl}/v1/screening/jobs/${created.body.job_id}`;
  await waitFor(async () => (await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`)).body.status === "running", 30_000);
  const sample = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
  console.log(`polled job ${created.body.job_id}: status ${sample.body.status}, stage ${sample.body.stage}, body ${JSON.stringify(sample.body).length} bytes`);
  const records = Array.from({ length: 20 }, (_, i) => ({ ID: `r${i}`, Title: `Record ${i}`, Abstract: "A trial in adults." }));
  const fields = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
  const indexerJob = await stack.http("POST", "/v1/indexer/jobs", { records, fields });
  if (indexerJob.status !== 200) throw new Error(`indexer job creation failed: ${indexerJob.status} ${JSON.stringify(indexerJob.body)}`);
  const indexerUrl = `${stack.baseUrl}/v1/indexer/jobs/${indexerJob.body.job_id}`;
  await waitFor(async () => (await stack.http("GET", `/v1/indexer/jobs/${indexerJob.body.job_id}`)).body.status === "running", 30_000);
  const indexerSample = await stack.http("GET", `/v1/indexer/jobs/${indexerJob.body.job_id}`);
  console.log(`polled indexer job ${indexerJob.body.job_id}: status ${indexerSample.body.status}, body ${JSON.stringify(indexerSample.body).length} bytes`);

  // Finished jobs, one per round (and one for the warm-up): mock, so they complete at once whatever
  // the slow provider does. Awaited through the second gateway: the measured one has never read them.
  const quietBase = `http://127.0.0.1:${quietPort}`;
  const finishedUrls: string[] = [];
  for (let n = 0; n <= ROUNDS; n++) {
    const finishedJob = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(20), criteria: [{ name: "p", type: "include", value: "Clinicians" }], mock: true });
    if (finishedJob.status !== 200) throw new Error(`finished job creation failed: ${finishedJob.status} ${JSON.stringify(finishedJob.body)}`);
    const path = `/v1/screening/jobs/${finishedJob.body.job_id}`;
    await waitFor(async () => (await stack.http("GET", path, undefined, { baseUrl: quietBase })).body.status === "completed", 30_000);
    finishedUrls.push(`${stack.baseUrl}${path}`);
  }
  const finishedSample = await stack.http("GET", new URL(finishedUrls[0]!).pathname, undefined, { baseUrl: quietBase });
  console.log(`finished jobs: status ${finishedSample.body.status}, body ${JSON.stringify(finishedSample.body).length} bytes; each round's first poll is the measured gateway's first read of its job`);

  const auth = { "x-api-key": TEST_API_KEY };
  await measure(helloUrl, {}, 2, CONNECTIONS); // warm-up
  await measure(pollUrl, auth, 2, CONNECTIONS);
  await measure(indexerUrl, auth, 2, CONNECTIONS);
  await measure(finishedUrls[ROUNDS]!, auth, 2, CONNECTIONS);
  const quietUrl = pollUrl.replace(stack.baseUrl, `http://127.0.0.1:${quietPort}`);
  await measure(quietUrl, auth, 2, CONNECTIONS);
  const hellos: Figures[] = [];
  const polls: Figures[] = [];
  const indexerPolls: Figures[] = [];
  const quietPolls: Figures[] = [];
  const finishedPolls: Figures[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    hellos.push(await measure(helloUrl, {}, SECONDS, CONNECTIONS));
    polls.push(await measure(pollUrl, auth, SECONDS, CONNECTIONS));
    indexerPolls.push(await measure(indexerUrl, auth, SECONDS, CONNECTIONS));
    quietPolls.push(await measure(quietUrl, auth, SECONDS, CONNECTIONS));
    finishedPolls.push(await measure(finishedUrls[round]!, auth, SECONDS, CONNECTIONS));
  }
  const show = (name: string, rows: Figures[]) =>
    console.log(
      `${name.padEnd(34)} ${mean(rows, "rps").toFixed(0).padStart(7)} req/s   p50 ${mean(rows, "p50").toFixed(2)} ms   p99 ${mean(rows, "p99").toFixed(2)} ms   non-2xx ${mean(rows, "non2xx")}   errors ${mean(rows, "errors")}`,
    );
  console.log(`\n${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s per target, alternating`);
  show("bare fastify hello (own process)", hellos);
  show("GET /v1/screening/jobs/{id}", polls);
  show("GET /v1/indexer/jobs/{id}", indexerPolls);
  show("  screening, every poll traced", quietPolls);
  show("GET finished job (first poll incl.)", finishedPolls);
  const ratio = mean(polls, "rps") / mean(hellos, "rps");
  const indexerRatio = mean(indexerPolls, "rps") / mean(hellos, "rps");
  const quietRatio = mean(quietPolls, "rps") / mean(hellos, "rps");
  console.log(`\nscreening polls / hello = ${ratio.toFixed(2)} (goal ≥ 0.6)   poll p99 ${mean(polls, "p99").toFixed(2)} ms (goal < 5 ms)`);
  console.log(`indexer polls / hello = ${indexerRatio.toFixed(2)} (goal ≥ 0.6)   poll p99 ${mean(indexerPolls, "p99").toFixed(2)} ms (goal < 5 ms)`);
  const finishedRatio = mean(finishedPolls, "rps") / mean(hellos, "rps");
  console.log(`finished-job polls (first poll included) / hello = ${finishedRatio.toFixed(2)} (goal ≥ 0.5)   poll p99 ${mean(finishedPolls, "p99").toFixed(2)} ms (goal < 5 ms)`);
  console.log(`polls / hello with an OpenTelemetry server span on every poll = ${quietRatio.toFixed(2)}`);
} finally {
  await stopProcess(quiet);
  await stopProcess(hello.child);
  await stack.stop();
  await provider.close();
}
