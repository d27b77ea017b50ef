/**
 * Live screening jobs of 2,000, 10,000 and 50,000 papers against a rate-limited fake provider, each
 * in a fresh screening worker: wall time against the provider's bound, the worker's peak memory per
 * job size (the goal: flat, 50,000 papers ≤ 1.25× 2,000), and provider tokens per paper against the
 * spec's estimate formula.
 *
 *   npm run bench -- screening [--sizes 2000,10000,50000] [--papers N (one size)] [--rpm 12000] [--latency-ms 100] [--concurrency 32]
 *                        [--profile openai|ollama|both] [--cache on|off|both] [--short] [--forecast]
 *   (or BENCH_SIZES, BENCH_PAPERS, BENCH_RPM, BENCH_LATENCY_MS, BENCH_CONCURRENCY, BENCH_PROFILE, BENCH_CACHE)
 *
 * `--profile` picks the server the fake imitates: `openai` honours `n` (a paper's R votes in one
 * request), `ollama` ignores it (one request per vote). Nothing is declared (no LLM_PROVIDER_N):
 * each profile is a fresh stack, which finds out what the server does with `n` by itself (a probe
 * before the first estimate). `--cache` turns the fake's prompt caching on or off (cached_tokens
 * reported for a repeated prefix of ≥ 1,024 tokens, as OpenAI does). Before each job, in the fresh
 * worker (the first job after a start), the bench asks POST /v1/screening/estimate as a client
 * would and sets the job's usage against both figures: `estimated_*` (the spec's formula, always)
 * and `forecast_*` (the service's own forecast of the bill for that server; goal: within ±15%).
 * `--short` is one 300-paper job per profile, both `n` profiles, cache on and off (four stacks);
 * `--forecast` is 300 and 3,000 papers, the same four profiles.
 *
 * Papers are real records from nagtegaal_2019.csv (repeated with new ids), with 4 criteria and 5
 * repetitions. The fake provider answers after L ms and enforces N requests per minute (429 with
 * retry-after and x-ratelimit headers). For the K successful calls a job needed, no schedule can
 * beat max(K/N minutes, K·L/C) with C calls in flight: the goal is a wall time within 10% of it.
 * Tokens are the provider's own usage figures summed by the worker (the fake counts ~4 characters
 * per token, as the spec's formula assumes ~440 tokens for an abstract). Peak RSS is the worker's
 * VmHWM: the worker is restarted before every job so each figure belongs to one job size. The
 * worker runs with the V8 heap ceiling `npm start` gives it (a NODE_OPTIONS of your own that sets
 * `--max-old-space-size` wins: run with a large one to see the uncapped figures).
 */
import { readFileSync } from "node:fs";
import { costUsd } from "../libs/llm/src/index";
import { PROVIDER_PROFILES, profileModelPrices, startFakeProvider, type FakeProvider } from "../libs/llm/src/testing/index";
import { NatsLink } from "../libs/messaging/src/index";
import { openJobInfra } from "../libs/jobs/src/index";
import { JOB_WORKER_HEAP_MB } from "../scripts/lib/launch";
import { startStack, waitFor, type RunningProcess, type Stack } from "../test/support/stack";
import { CRITERIA, screeningPapers, screeningResponder } from "../test/e2e/screening-fixtures";

const options = { sizes: "2000,10000,50000", papers: 0, rpm: 12_000, latencyMs: 100, concurrency: 32, profile: "openai", cache: "on" };
const FLAGS: Record<string, keyof typeof options> = {
  "--sizes": "sizes",
  "--papers": "papers",
  "--rpm": "rpm",
  "--latency-ms": "latencyMs",
  "--concurrency": "concurrency",
  "--profile": "profile",
  "--cache": "cache",
};
const ENV: Record<keyof typeof options, string> = {
  sizes: "BENCH_SIZES",
  papers: "BENCH_PAPERS",
  rpm: "BENCH_RPM",
  latencyMs: "BENCH_LATENCY_MS",
  concurrency: "BENCH_CONCURRENCY",
  profile: "BENCH_PROFILE",
  cache: "BENCH_CACHE",
};
const set = (key: keyof typeof options, value: string) => {
  if (key === "sizes" || key === "profile" || key === "cache") options[key] = value;
  else options[key] = Number(value);
};
for (const key of Object.keys(ENV) as (keyof typeof options)[]) if (process.env[ENV[key]]) set(key, process.env[ENV[key]]!);
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const [flag, inline] = argv[i]!.split("=", 2) as [string, string | undefined];
  if (flag === "--short") {
    options.papers ||= 300;
    options.profile = "both";
    options.cache = "both";
    continue;
  }
  if (flag === "--forecast") {
    options.sizes = "300,3000";
    options.profile = "both";
    options.cache = "both";
    continue;
  }
  const key = FLAGS[flag];
  if (!key) throw new Error(`unknown option ${flag}; expected --short or one of ${Object.keys(FLAGS).join(", ")}`);
  set(key, inline ?? argv[++i]!);
}
const sizes = options.papers > 0 ? [options.papers] : options.sizes.split(",").map((v) => Number(v.trim()));
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be positive integers, got ${options.sizes}`);
type BenchProfile = "openai" | "ollama";
const profiles: BenchProfile[] = options.profile === "both" ? ["openai", "ollama"] : [options.profile as BenchProfile];
if (profiles.some((p) => p !== "openai" && p !== "ollama")) throw new Error(`--profile must be openai, ollama or both, got ${options.profile}`);
const caches: boolean[] = options.cache === "both" ? [true, false] : options.cache === "on" ? [true] : options.cache === "off" ? [false] : [];
if (caches.length === 0) throw new Error(`--cache must be on, off or both, got ${options.cache}`);
/** The service's forecast and the bill must agree this closely (the spec's own figure: about ±30%). */
const FORECAST_TOLERANCE = 0.15;
const REPETITIONS = 5;
const MODEL = "llm-5-nano";

interface Usage {
  calls: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}
interface TokenCheck {
  profile: BenchProfile;
  cache: boolean;
  papers: number;
  /** The spec's formula (`estimated_*`). */
  estimate: { input: number; output: number; cost: number };
  /** The service's forecast (`forecast_*`) and the handling of `n` it assumed. */
  forecast: { input: number; output: number; cost: number; n: string };
  actual: { input: number; cached: number; output: number; cost: number };
}
interface SizeResult {
  papers: number;
  outcome: string;
  wallSeconds?: number;
  boundSeconds?: number;
  peakRssMb: number;
  results?: number;
}

const tokenChecks: TokenCheck[] = [];
for (const profile of profiles) for (const cache of caches) await benchProfile(profile, cache);
if (tokenChecks.length > 0) {
  console.log(`\nforecast (forecast_cost_usd, asked before each job in a fresh worker) against the provider's usage, ±${FORECAST_TOLERANCE * 100}%:`);
  console.log(
    `${"server".padEnd(30)}  ${"papers".padStart(6)}  ${"assumes n".padEnd(9)}  ${"forecast in / out".padStart(19)}  ${"actual in / out".padStart(19)}  ${"cached".padStart(6)}  ${"forecast $".padStart(10)}  ${"actual $".padStart(10)}  ${"actual/forecast".padStart(15)}  within  ${"spec $".padStart(10)}  actual/spec`,
  );
  for (const c of tokenChecks) {
    const ratio = c.actual.cost / c.forecast.cost;
    console.log(
      [
        `${c.profile === "openai" ? "openai (n honoured)" : "ollama (n ignored)"}, cache ${c.cache ? "on" : "off"}`.padEnd(30),
        String(c.papers).padStart(6),
        c.forecast.n.padEnd(9),
        `${c.forecast.input} / ${c.forecast.output}`.padStart(19),
        `${c.actual.input} / ${c.actual.output}`.padStart(19),
        `${((100 * c.actual.cached) / Math.max(1, c.actual.input)).toFixed(0)}%`.padStart(6),
        c.forecast.cost.toFixed(6).padStart(10),
        c.actual.cost.toFixed(6).padStart(10),
        `${ratio.toFixed(3)} (in ${(c.actual.input / c.forecast.input).toFixed(2)})`.padStart(15),
        (Math.abs(ratio - 1) <= FORECAST_TOLERANCE ? "yes" : "no").padEnd(6),
        c.estimate.cost.toFixed(6).padStart(10),
        (c.actual.cost / c.estimate.cost).toFixed(2),
      ].join("  "),
    );
  }
}

async function benchProfile(profile: BenchProfile, cache: boolean): Promise<void> {
  const provider = await startFakeProvider({
    latencyMs: options.latencyMs,
    requestsPerMinute: options.rpm,
    respond: screeningResponder(),
    promptCache: cache,
    ...(profile === "openai" ? {} : { profile }),
  });
  // The fake records every request; tally answered ones and let them go, so the bench process stays small at 50,000 papers.
  const tally: Tally = { ok: 0, rejected: 0, timeline: [] };
  const drain = setInterval(() => {
    const pending = provider.requests.filter((r) => r.status === undefined);
    for (const r of provider.requests) {
      if (!r.path.endsWith("/chat/completions") || r.status === undefined) continue;
      if (r.status === 200) {
        tally.ok++;
        tally.timeline.push({ at: r.receivedAt, done: r.answeredAt ?? r.receivedAt, stage: stageOf(r.body) });
      } else if (r.status === 429) tally.rejected++;
    }
    provider.requests.splice(0, provider.requests.length, ...pending);
  }, 500);
  // Another server: its model names, priced like gpt-5-nano. What it does with `n` is not declared.
  const server = profile === "openai"
    ? { OPENAI_BASE_URL: provider.url }
    : { OPENAI_BASE_URL: provider.baseUrl(profile), LLM_MODEL_ALIASES: JSON.stringify(PROVIDER_PROFILES[profile].aliases), MODEL_PRICES: profileModelPrices() };
  const stack = await startStack({
    services: {},
    env: { OPENAI_API_KEY: "sk-bench-screening", LLM_CONCURRENCY: String(options.concurrency), SCREENING_CALL_CONCURRENCY: String(options.concurrency), ...server },
  });
  const link = new NatsLink({ servers: stack.natsUrl, name: "bench-screening" });
  const summary: SizeResult[] = [];
  let idleRssMb = 0;
  try {
    const infra = await openJobInfra(await link.ready(), "screening");
    console.log(`\n════ server: ${profile === "openai" ? "OpenAI (n honoured)" : "Ollama (n ignored)"}, prompt caching ${cache ? "on" : "off"}`);
    console.log(`live screening jobs: ${sizes.map((n) => n.toLocaleString("en")).join(", ")} papers; ${CRITERIA.length} criteria, ${REPETITIONS} repetitions, model ${MODEL}`);
    console.log(`fake provider: ${options.rpm} requests/min, ${options.latencyMs} ms latency; ${options.concurrency} calls in flight; a fresh worker per job`);
    console.log(`worker started as npm start starts it: NODE_OPTIONS=--max-old-space-size=${JOB_WORKER_HEAP_MB} (scripts/lib/launch.ts)${process.env.NODE_OPTIONS ? `, then ${process.env.NODE_OPTIONS}` : ""}`);
    let worker: RunningProcess | undefined;
    for (const size of sizes) {
      if (worker) await stack.stopProcess(worker);
      worker = await stack.startService("screening");
      idleRssMb = Math.max(idleRssMb, peakRss(worker.child.pid!));
      summary.push(await runJob({ size, worker, infra, stack, provider, tally, profile, cache }));
    }

    console.log(`\n${"papers".padStart(8)}  ${"outcome".padEnd(44)}  ${"wall s".padStart(7)}  ${"wall/bound".padStart(10)}  ${"peak RSS".padStart(9)}  ${"× first".padStart(7)}`);
    for (const r of summary) {
      const cells = [
        r.papers.toLocaleString("en").padStart(8),
        r.outcome.slice(0, 44).padEnd(44),
        (r.wallSeconds?.toFixed(1) ?? "–").padStart(7),
        (r.wallSeconds && r.boundSeconds ? (r.wallSeconds / r.boundSeconds).toFixed(3) : "–").padStart(10),
        `${r.peakRssMb.toFixed(0)} MB`.padStart(9),
        (r.peakRssMb / summary[0]!.peakRssMb).toFixed(2).padStart(7),
      ];
      console.log(cells.join("  "));
    }
    console.log(`idle worker RSS ≈ ${idleRssMb.toFixed(0)} MB (VmHWM right after start-up)`);
    const small = summary.find((r) => r.papers === 2_000);
    const large = summary.find((r) => r.papers === 50_000);
    if (small && large) {
      const ok = large.outcome.startsWith("completed") && large.results === 50_000;
      console.log(
        large.wallSeconds === undefined
          ? `peak RSS 50,000 / 2,000 papers: not measured (the 50,000-paper job ${large.outcome})`
          : `peak RSS 50,000 / 2,000 papers: ${(large.peakRssMb / small.peakRssMb).toFixed(2)}× (goal ≤ 1.25×; a result for every paper: ${ok ? "yes" : "no"})`,
      );
    }
  } finally {
    clearInterval(drain);
    await link.close();
    await stack.stop();
    await provider.close();
  }
}

interface JobRun {
  size: number;
  worker: RunningProcess;
  infra: Awaited<ReturnType<typeof openJobInfra>>;
  stack: Stack;
  provider: FakeProvider;
  tally: Tally;
  profile: BenchProfile;
  cache: boolean;
}

async function runJob({ size, worker, infra, stack, tally, profile, cache }: JobRun): Promise<SizeResult> {
  tally.ok = 0;
  tally.rejected = 0;
  tally.timeline.length = 0;
  // What a client sees before it creates the job: asked of the fresh worker, before its first job.
  const c = CRITERIA.length;
  const estimate = await waitFor(async () => {
    const res = await stack.http("POST", "/v1/screening/estimate", { papers_count: size, repetitions: REPETITIONS, criteria_count: c, model: MODEL });
    return res.status === 200 ? res.body : null;
  }, 30_000, 100);
  let papers: ReturnType<typeof screeningPapers> | undefined = screeningPapers(size);
  const bodyBytes = JSON.stringify(papers).length;
  console.log(`\n── ${size.toLocaleString("en")} papers (${(bodyBytes / 1e6).toFixed(1)} MB of JSON)`);
  const started = Date.now();
  const created = await stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: REPETITIONS, model: MODEL });
  papers = undefined;
  if (created.status !== 200) {
    const detail = JSON.stringify(created.body).slice(0, 200);
    console.log(`job creation refused: HTTP ${created.status} ${detail}`);
    return { papers: size, outcome: `refused at admission (HTTP ${created.status})`, peakRssMb: peakRss(worker.child.pid!) };
  }
  const admittedMs = Date.now() - started;
  // Watch the live state directly (a gateway poll would take the finished job out of the registry).
  const state = await waitFor(async () => {
    const entry = await infra.registry.get(created.body.job_id);
    return entry && (entry.state.status === "completed" || entry.state.status === "failed") ? entry.state : null;
  }, 60 * 60_000, 500);
  const peakRssMb = peakRss(worker.child.pid!);
  const wallSeconds = (Date.parse(state.completed_at!) - Date.parse(state.created_at)) / 1000;
  if (state.status !== "completed") {
    console.log(`job failed after ${wallSeconds.toFixed(1)} s: ${state.error}`);
    return { papers: size, outcome: `failed: ${state.error ?? ""}`, wallSeconds, peakRssMb };
  }
  const poll = await stack.http("GET", `/v1/screening/jobs/${created.body.job_id}`);
  const results = Array.isArray(poll.body?.results) ? (poll.body.results as unknown[]).length : 0;
  const pollMb = poll.status === 200 ? (JSON.stringify(poll.body).length / 1e6).toFixed(1) : "–";

  await new Promise((r) => setTimeout(r, 600)); // one more drain of the provider's records
  const ok = tally.ok;
  const boundSeconds = Math.max((ok / options.rpm) * 60, (ok * options.latencyMs) / 1000 / options.concurrency);
  // The job's usage (JobUsage: cost in estimated_cost_usd); the per-stage figures keep the pipeline's own shape.
  const total = state.extra.usage as Omit<Usage, "cost_usd"> & { estimated_cost_usd: number };
  const usage: Usage = { ...total, cost_usd: total.estimated_cost_usd };
  const byStage = state.extra.usage_by_stage as Record<string, Usage>;
  const formulaIn = (200 + 30 * c) * REPETITIONS + 300;
  const formulaOut = 10 * REPETITIONS + 100;
  const formulaCost = costUsd({ model: MODEL, inputTokens: formulaIn, outputTokens: formulaOut });
  const per = (n: number) => n / size;

  console.log(`admission (HTTP 200): ${admittedMs} ms; result poll: ${poll.status}, ${pollMb} MB, ${results} results`);
  console.log(`wall time                      ${wallSeconds.toFixed(1)} s (created → completed)`);
  console.log(`provider calls                 ${ok} answered, ${tally.rejected} answered 429 (absorbed by the limiter)`);
  console.log(`bound max(K/N, K·L/C)          ${boundSeconds.toFixed(1)} s`);
  console.log(`wall / bound                   ${(wallSeconds / boundSeconds).toFixed(3)} (goal ≤ 1.10)`);
  printTimeline(tally.timeline, Date.parse(state.created_at), Date.parse(state.completed_at!));
  console.log(`stage timings                  ${Object.entries(state.stage_timings).map(([k, v]) => `${k} ${((v ?? 0) / 1000).toFixed(1)} s`).join(", ")}`);
  console.log(`worker peak RSS (VmHWM)        ${peakRssMb.toFixed(0)} MB`);
  console.log(`tokens per paper               input ${per(usage.input_tokens).toFixed(0)} (cached ${per(usage.cached_input_tokens).toFixed(0)}), output ${per(usage.output_tokens).toFixed(0)}`);
  for (const [stage, u] of Object.entries(byStage)) {
    console.log(`  ${stage.padEnd(28)} input ${per(u.input_tokens).toFixed(0)}, output ${per(u.output_tokens).toFixed(1)}, ${u.calls} calls`);
  }
  console.log(`spec formula per paper         input ${formulaIn}, output ${formulaOut}`);
  console.log(`ratio to the formula           input ${(per(usage.input_tokens) / formulaIn).toFixed(2)}, output ${(per(usage.output_tokens) / formulaOut).toFixed(2)}, total ${((per(usage.input_tokens) + per(usage.output_tokens)) / (formulaIn + formulaOut)).toFixed(2)}`);
  console.log(`cost per paper                 $${per(usage.cost_usd).toFixed(7)} vs formula $${formulaCost.toFixed(7)} → ${(per(usage.cost_usd) / formulaCost).toFixed(2)} (goal ≤ 1, aim 0.5)`);
  const check: TokenCheck = {
    profile,
    cache,
    papers: size,
    estimate: { input: estimate.estimated_input_tokens, output: estimate.estimated_output_tokens, cost: estimate.estimated_cost_usd },
    forecast: { input: estimate.forecast_input_tokens, output: estimate.forecast_output_tokens, cost: estimate.forecast_cost_usd, n: estimate.forecast_provider_n },
    actual: { input: usage.input_tokens, cached: usage.cached_input_tokens, output: usage.output_tokens, cost: usage.cost_usd },
  };
  tokenChecks.push(check);
  console.log(
    `forecast for this server       input ${check.forecast.input}, output ${check.forecast.output}, $${check.forecast.cost} (n ${check.forecast.n}); ` +
      `actual/forecast ${(check.actual.cost / check.forecast.cost).toFixed(3)} (input ${(check.actual.input / check.forecast.input).toFixed(2)}, output ${(check.actual.output / check.forecast.output).toFixed(2)})`,
  );
  const complete = poll.status === 200 && results === size;
  return { papers: size, outcome: complete ? "completed, a result for every paper" : `completed, poll ${poll.status} with ${results} results`, wallSeconds, boundSeconds, peakRssMb, results };
}

interface Tally {
  ok: number;
  rejected: number;
  /** When each answered call reached the provider and was answered, and its reply schema's name (its stage and shape). */
  timeline: { at: number; done: number; stage: string }[];
}

function stageOf(body: unknown): string {
  const name = (body as { response_format?: { json_schema?: { name?: string } } } | undefined)?.response_format?.json_schema?.name ?? "(no schema)";
  return name.replace(/([-_]?\d+)+$/, "");
}

/** Where a job's wall time went between its calls: before the first, after the last, each stage's span, and the gaps of 40 ms or more with no call sent. */
function printTimeline(timeline: Tally["timeline"], createdAt: number, completedAt: number): void {
  if (timeline.length === 0) return;
  const calls = [...timeline].sort((a, b) => a.at - b.at);
  const rel = (t: number) => `${((t - createdAt) / 1000).toFixed(2)} s`;
  console.log(`calls sent from               ${rel(calls[0]!.at)} to ${rel(calls.at(-1)!.at)} after creation; completed at ${rel(completedAt)}`);
  const stages = new Map<string, { first: number; last: number; n: number }>();
  for (const { at, stage } of calls) {
    const s = stages.get(stage) ?? { first: at, last: at, n: 0 };
    s.last = at;
    s.n++;
    stages.set(stage, s);
  }
  for (const [stage, { first, last, n }] of stages) console.log(`  ${stage.padEnd(28)} ${n} calls, ${rel(first)} → ${rel(last)}`);
  const gaps: string[] = [];
  for (let i = 1; i < calls.length; i++) {
    const gap = calls[i]!.at - calls[i - 1]!.at;
    if (gap < 40) continue;
    // How many calls the provider still held as the gap began: the job's whole window, or a stall of its own.
    const held = calls.filter((c) => c.at <= calls[i - 1]!.at && c.done > calls[i - 1]!.at).length;
    gaps.push(`${gap} ms at ${rel(calls[i - 1]!.at)} (${calls[i - 1]!.stage} → ${calls[i]!.stage}, ${held} in flight)`);
  }
  console.log(`gaps of ≥ 40 ms between calls ${gaps.length ? gaps.join("; ") : "none"}`);
  const slow = calls.filter((c) => c.done - c.at > 150).length;
  console.log(`calls held over 150 ms         ${slow} of ${calls.length}`);
}

/** Peak resident set size of a Linux process, from /proc (VmHWM). */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}
