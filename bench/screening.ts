/**
 * A live 10,000-paper screening job against a rate-limited fake provider: wall time against the
 * provider's bound, the worker's peak memory, and provider tokens per paper against the spec's
 * estimate formula.
 *
 *   pnpm bench screening [--papers 10000] [--rpm 12000] [--latency-ms 100] [--concurrency 32]
 *   (or BENCH_PAPERS, BENCH_RPM, BENCH_LATENCY_MS, BENCH_CONCURRENCY)
 *
 * Papers are real records from nagtegaal_2019.csv (repeated with new ids), with 4 criteria and 5
 * repetitions. The fake provider answers after L ms and enforces N requests per minute (429 with
 * retry-after and x-ratelimit headers). For the K successful calls the job needed, no schedule can
 * beat max(K/N minutes, K·L/C) with C calls in flight: the goal is a wall time within 10% of it.
 * Tokens are the provider's own usage figures summed by the worker (the fake counts ~4 characters
 * per token, as the spec's formula assumes ~440 tokens for an abstract).
 */
import { readFileSync } from "node:fs";
import { costUsd } from "../libs/llm/src/index";
import { startFakeProvider } from "../libs/llm/src/testing/index";
import { NatsLink } from "../libs/messaging/src/index";
import { openJobInfra } from "../libs/jobs/src/index";
import { startStack, waitFor } from "../test/support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../test/e2e/screening-fixtures";

const options = { papers: 10_000, rpm: 12_000, latencyMs: 100, concurrency: 32 };
const FLAGS: Record<string, keyof typeof options> = { "--papers": "papers", "--rpm": "rpm", "--latency-ms": "latencyMs", "--concurrency": "concurrency" };
const ENV: Record<keyof typeof options, string> = { papers: "BENCH_PAPERS", rpm: "BENCH_RPM", latencyMs: "BENCH_LATENCY_MS", concurrency: "BENCH_CONCURRENCY" };
for (const key of Object.keys(ENV) as (keyof typeof options)[]) if (process.env[ENV[key]]) options[key] = Number(process.env[ENV[key]]);
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const [flag, inline] = argv[i]!.split("=", 2) as [string, string | undefined];
  const key = FLAGS[flag];
  if (!key) throw new Error(`unknown option ${flag}; expected one of ${Object.keys(FLAGS).join(", ")}`);
  options[key] = Number(inline ?? argv[++i]);
}
const REPETITIONS = 5;
const MODEL = "llm-5-nano";

const provider = await startFakeProvider({ latencyMs: options.latencyMs, requestsPerMinute: options.rpm, respond: screeningResponder() });
const stack = await startStack({
  services: { screening: 1 },
  env: { OPENAI_API_KEY: "sk-bench-screening", OPENAI_BASE_URL: provider.url, LLM_CONCURRENCY: String(options.concurrency), SCREENING_CALL_CONCURRENCY: String(options.concurrency) },
});
const link = new NatsLink({ servers: stack.natsUrl, name: "bench-screening" });
try {
  const infra = await openJobInfra(await link.ready(), "screening");
  const worker = stack.processes.find((p) => p.name === "screening")!;
  const papers = screeningPapers(options.papers);
  const bodyBytes = JSON.stringify(papers).length;
  const started = Date.now();
  const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: REPETITIONS, model: MODEL });
  if (created.status !== 200) throw new Error(`job creation failed: ${created.status} ${JSON.stringify(created.body).slice(0, 300)}`);
  const admittedMs = Date.now() - started;
  // Watch the live state directly (a gateway poll would take the finished job out of the registry).
  const state = await waitFor(async () => {
    const entry = await infra.registry.get(created.body.job_id);
    return entry && (entry.state.status === "completed" || entry.state.status === "failed") ? entry.state : null;
  }, 30 * 60_000, 200);
  const wallSeconds = (Date.parse(state.completed_at!) - Date.parse(state.created_at)) / 1000;
  const peakRssMb = peakRss(worker.child.pid!);
  const poll = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
  if (state.status !== "completed") throw new Error(`job failed: ${state.error}`);

  const calls = provider.chatRequests();
  const ok = calls.filter((r) => r.status === 200).length;
  const rejected = calls.filter((r) => r.status === 429).length;
  const boundSeconds = Math.max((ok / options.rpm) * 60, (ok * options.latencyMs) / 1000 / options.concurrency);
  const usage = state.extra.usage as { calls: number; input_tokens: number; cached_input_tokens: number; output_tokens: number; cost_usd: number };
  const byStage = state.extra.usage_by_stage as Record<string, typeof usage>;
  const c = CRITERIA.length;
  const formulaIn = (200 + 30 * c) * REPETITIONS + 300;
  const formulaOut = 10 * REPETITIONS + 100;
  const formulaCost = costUsd({ model: MODEL, inputTokens: formulaIn, outputTokens: formulaOut });
  const per = (n: number) => n / options.papers;

  console.log(`\nlive screening job: ${options.papers} papers (${(bodyBytes / 1e6).toFixed(1)} MB of JSON), ${c} criteria, ${REPETITIONS} repetitions, model ${MODEL}`);
  console.log(`fake provider: ${options.rpm} requests/min, ${options.latencyMs} ms latency; ${options.concurrency} calls in flight`);
  console.log(`admission (HTTP 200): ${admittedMs} ms; result poll: ${poll.status}, ${(JSON.stringify(poll.body).length / 1e6).toFixed(1)} MB`);
  console.log(`\nwall time                      ${wallSeconds.toFixed(1)} s (created → completed)`);
  console.log(`provider calls                 ${ok} answered, ${rejected} answered 429 (absorbed by the limiter)`);
  console.log(`bound max(K/N, K·L/C)          ${boundSeconds.toFixed(1)} s`);
  console.log(`wall / bound                   ${(wallSeconds / boundSeconds).toFixed(3)} (goal ≤ 1.10)`);
  console.log(`stage timings                  ${Object.entries(state.stage_timings).map(([k, v]) => `${k} ${((v ?? 0) / 1000).toFixed(1)} s`).join(", ")}`);
  console.log(`worker peak RSS (VmHWM)        ${peakRssMb.toFixed(0)} MB`);
  console.log(`\ntokens per paper               input ${per(usage.input_tokens).toFixed(0)} (cached ${per(usage.cached_input_tokens).toFixed(0)}), output ${per(usage.output_tokens).toFixed(0)}`);
  for (const [stage, u] of Object.entries(byStage)) {
    console.log(`  ${stage.padEnd(28)} input ${per(u.input_tokens).toFixed(0)}, output ${per(u.output_tokens).toFixed(1)}, ${u.calls} calls`);
  }
  console.log(`spec formula per paper         input ${formulaIn}, output ${formulaOut}`);
  console.log(`ratio to the formula           input ${(per(usage.input_tokens) / formulaIn).toFixed(2)}, output ${(per(usage.output_tokens) / formulaOut).toFixed(2)}, total ${((per(usage.input_tokens) + per(usage.output_tokens)) / (formulaIn + formulaOut)).toFixed(2)}`);
  console.log(`cost per paper                 $${per(usage.cost_usd).toFixed(7)} vs formula $${formulaCost.toFixed(7)} → ${(per(usage.cost_usd) / formulaCost).toFixed(2)} (goal ≤ 1, aim 0.5)`);
} finally {
  await link.close();
  await stack.stop();
  await provider.close();
}

/** Peak resident set size of a Linux process, from /proc (VmHWM). */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}
