/**
 * Poll throughput of one gateway while it serves 200 job event streams, as a ratio to a bare
 * fastify hello-world route measured in the same run (goal ≥ 0.5), next to the same gateway's
 * polls with no stream open.
 *
 *   npm run bench -- events       (knobs: BENCH_STREAMS=200, BENCH_JOBS=20, BENCH_CONNECTIONS=10, BENCH_SECONDS=5, BENCH_ROUNDS=3)
 *
 * Starts a real stack (nats-server, one gateway, a screening worker) and the fake provider, which
 * answers slowly so the polled screening job stays `running`. The streams follow BENCH_JOBS running
 * jobs whose live state this process advances as a worker does (one progress write per job every
 * 250 ms, the worker's throttle), so the gateway fans out state events to every stream while the
 * polls are measured. At the end the jobs finish and every stream must receive its end event.
 * Runs alternate hello / poll so background noise hits both alike.
 */
import { randomUUID } from "node:crypto";
import { openJobInfra } from "@litrev/jobs";
import { applyProgress, newJobState } from "@litrev/jobs/client";
import { NatsLink } from "@litrev/messaging";
import { startHelloServer } from "./support/hello";
import { knob } from "./support/knobs";
import { mean, measure, type Figures } from "./support/measure";
import { startFakeProvider } from "../libs/llm/src/testing/index";
import { stopProcess } from "../scripts/lib/launch";
import { TEST_API_KEY, startStack, waitFor } from "../test/support/stack";
import { screeningPapers } from "../test/e2e/screening-fixtures";

const STREAMS = knob("BENCH_STREAMS", 200);
const JOBS = knob("BENCH_JOBS", 20);
const CONNECTIONS = knob("BENCH_CONNECTIONS", 10);
const SECONDS = knob("BENCH_SECONDS", 5);
const ROUNDS = knob("BENCH_ROUNDS", 3);
const WRITE_EVERY_MS = 250;

/** One open event stream, counted rather than parsed (the client's cost should not crowd the gateway's). */
interface StreamCount {
  status: number;
  states: number;
  ended: boolean;
  done: Promise<void>;
}

function openStream(url: string, signal: AbortSignal): Promise<StreamCount> {
  return new Promise((resolve, reject) => {
    const count: StreamCount = { status: 0, states: 0, ended: false, done: Promise.resolve() };
    count.done = (async () => {
      const response = await fetch(url, { headers: { "x-api-key": TEST_API_KEY }, signal });
      count.status = response.status;
      resolve(count);
      if (!response.ok) return;
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let tail = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        const text = tail + value;
        count.states += text.split("event: state\n").length - 1;
        if (text.includes("event: end\n")) count.ended = true;
        tail = text.slice(-16);
      }
    })().catch((error: unknown) => {
      if (!signal.aborted) reject(error as Error);
    });
  });
}

const provider = await startFakeProvider({ latencyMs: 60_000 });
const stack = await startStack({
  services: { screening: 1 },
  env: { OPENAI_API_KEY: "sk-bench-events", OPENAI_BASE_URL: provider.url, LLM_CONCURRENCY: "1", LLM_DEADLINE_MS: "600000", MAX_EVENT_STREAMS: String(STREAMS + 10), EVENT_STREAMS_PER_OWNER: String(STREAMS + 10) },
});
const hello = await startHelloServer();
const helloUrl = `${hello.url}/hello`;
const link = new NatsLink({ servers: stack.natsUrl, name: "bench-events" });
const aborts = new AbortController();
let writing = true;
try {
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(50), criteria: [{ name: "p", type: "include", value: "Clinicians" }] });
  if (created.status !== 200) throw new Error(`job creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  const pollUrl = `${stack.baseUrl}/v1/screening/jobs/${created.body.job_id}`;
  await waitFor(async () => (await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`)).body.status === "running", 30_000);

  // Running jobs that this process advances the way a worker reports progress.
  const infra = await openJobInfra(await link.ready(), "screening");
  const jobIds = Array.from({ length: JOBS }, () => randomUUID());
  for (const jobId of jobIds) {
    const state = newJobState({ jobId, service: "screening", modelVersion: "llm-5-nano", config: { model: "llm-5-nano", papers_count: 1000 }, estimatedCostUsd: 0.5 });
    await infra.registry.create({ ...state, status: "running", started_at: new Date().toISOString(), stage: "labelling" });
  }
  let writes = 0;
  const writer = (async () => {
    let tick = 0;
    while (writing) {
      tick++;
      const started = Date.now();
      await Promise.all(
        jobIds.map((jobId) =>
          infra.registry
            .update(jobId, (s) => applyProgress(s, { progress: Math.min(0.99, tick / 100_000), extra: { usage: { input_tokens: tick * 100, output_tokens: tick * 10, cost_usd: tick * 1e-5 } } }))
            .then(() => writes++),
        ),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, WRITE_EVERY_MS - (Date.now() - started))));
    }
  })();

  const auth = { "x-api-key": TEST_API_KEY };
  await measure(helloUrl, {}, 2, CONNECTIONS); // warm-up
  await measure(pollUrl, auth, 2, CONNECTIONS);
  const quiet: Figures[] = [];
  for (let round = 0; round < ROUNDS; round++) quiet.push(await measure(pollUrl, auth, SECONDS, CONNECTIONS));

  const streams = await Promise.all(
    Array.from({ length: STREAMS }, (_, i) => openStream(`${stack.baseUrl}/v1/screening/jobs/${jobIds[i % JOBS]}/events`, aborts.signal)),
  );
  const refused = streams.filter((s) => s.status !== 200).length;
  if (refused > 0) throw new Error(`${refused} of ${STREAMS} streams were refused`);
  const statesBefore = streams.reduce((sum, s) => sum + s.states, 0);
  const writesBefore = writes;
  const measuredFrom = Date.now();
  const hellos: Figures[] = [];
  const polls: Figures[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    hellos.push(await measure(helloUrl, {}, SECONDS, CONNECTIONS));
    polls.push(await measure(pollUrl, auth, SECONDS, CONNECTIONS));
  }
  const measuredSeconds = (Date.now() - measuredFrom) / 1000;
  const delivered = streams.reduce((sum, s) => sum + s.states, 0) - statesBefore;
  const progressWrites = writes - writesBefore;

  // The jobs end; every stream must get its end event.
  writing = false;
  await writer;
  for (const jobId of jobIds) {
    await infra.registry.update(jobId, (s) => ({ ...s, status: "completed", progress: 1, stage: "Complete", completed_at: new Date().toISOString(), duration_ms: 1 }));
  }
  await Promise.race([Promise.all(streams.map((s) => s.done)), new Promise((r) => setTimeout(r, 30_000))]);
  const ended = streams.filter((s) => s.ended).length;

  const show = (name: string, rows: Figures[]) =>
    console.log(
      `${name.padEnd(40)} ${mean(rows, "rps").toFixed(0).padStart(7)} req/s   p50 ${mean(rows, "p50").toFixed(2)} ms   p99 ${mean(rows, "p99").toFixed(2)} ms   non-2xx ${mean(rows, "non2xx")}   errors ${mean(rows, "errors")}`,
    );
  console.log(`\n${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s per target; ${STREAMS} event streams on ${JOBS} running jobs, each written every ${WRITE_EVERY_MS} ms`);
  show("bare fastify hello (own process)", hellos);
  show("GET /v1/screening/jobs/{id}, no stream", quiet);
  show(`GET /v1/screening/jobs/{id}, ${STREAMS} streams`, polls);
  console.log(
    `while measured: ${progressWrites} progress writes (${(progressWrites / measuredSeconds).toFixed(0)}/s), ${delivered} state events delivered to the streams (${(delivered / measuredSeconds).toFixed(0)}/s)`,
  );
  console.log(`end events received: ${ended} of ${STREAMS} streams`);
  const ratio = mean(polls, "rps") / mean(hellos, "rps");
  console.log(`\npolls with ${STREAMS} streams open / hello = ${ratio.toFixed(2)} (goal ≥ 0.5)   (no stream: ${(mean(quiet, "rps") / mean(hellos, "rps")).toFixed(2)})`);
  if (ended < STREAMS) process.exitCode = 1;
} finally {
  writing = false;
  aborts.abort();
  await link.close();
  await stopProcess(hello.child);
  await stack.stop();
  await provider.close();
}
