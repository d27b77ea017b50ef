import { writeFileSync } from "node:fs";
import { startFakeProvider } from "../libs/llm/src/testing/index";
import { NatsLink } from "../libs/messaging/src/index";
import { openJobInfra } from "../libs/jobs/src/index";
import { startStack, waitFor } from "../test/support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../test/e2e/screening-fixtures";

const size = Number(process.argv[2] ?? 10000);
const provider = await startFakeProvider({ latencyMs: 100, requestsPerMinute: 12000, respond: screeningResponder() });
const drain = setInterval(() => provider.requests.splice(0, provider.requests.length), 500);
const stack = await startStack({ services: {}, env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: provider.url, LLM_CONCURRENCY: "32", SCREENING_CALL_CONCURRENCY: "32" } });
const link = new NatsLink({ servers: stack.natsUrl, name: "probe" });
try {
  const infra = await openJobInfra(await link.ready(), "screening");
  const worker = await stack.startService("screening", { NODE_OPTIONS: process.env.PROBE_NODE_OPTIONS ?? "--trace-gc" });
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(size), criteria: CRITERIA, repetitions: 5, model: "llm-5-nano" });
  const state = await waitFor(async () => {
    const e = await infra.registry.get(created.body.job_id);
    return e && (e.state.status === "completed" || e.state.status === "failed") ? e.state : null;
  }, 600_000, 500);
  console.log(state.status, state.stage_timings);
  writeFileSync(`.tmp/gc-${size}.log`, worker.output());
} finally {
  clearInterval(drain);
  await link.close();
  await stack.stop();
  await provider.close();
}
