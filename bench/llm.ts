/**
 * Throughput of the language-model layer against a rate-limited provider.
 *
 *   tsx bench/llm.ts [--calls 600] [--latency-ms 200] [--rpm 1200] [--concurrency 16]
 *   (or BENCH_CALLS, BENCH_LATENCY_MS, BENCH_RPM, BENCH_CONCURRENCY)
 *
 * K calls go through ONE LlmClient to the fake provider, which answers after L ms and enforces
 * N requests per minute with 429s and x-ratelimit headers. No schedule can beat
 * max(K/N minutes, K·L/C): the provider's limit, or C slots each busy L ms per call. The goal
 * is a wall time within 10% of that bound with zero 429s reaching callers.
 * Exits non-zero if any call failed.
 */
import { LlmClient } from "../libs/llm/src/index";
import { SampleDecision, startFakeProvider } from "../libs/llm/src/testing/index";

interface BenchOptions {
  calls: number;
  latencyMs: number;
  rpm: number;
  concurrency: number;
}

const DEFAULTS: BenchOptions = { calls: 600, latencyMs: 200, rpm: 1200, concurrency: 16 };
const FLAGS: Record<string, keyof BenchOptions> = {
  "--calls": "calls",
  "--latency-ms": "latencyMs",
  "--rpm": "rpm",
  "--concurrency": "concurrency",
};
const ENV: Record<keyof BenchOptions, string> = {
  calls: "BENCH_CALLS",
  latencyMs: "BENCH_LATENCY_MS",
  rpm: "BENCH_RPM",
  concurrency: "BENCH_CONCURRENCY",
};

/** Flags (`--calls 600` or `--calls=600`) win over environment variables, which win over defaults. */
function readOptions(argv: string[]): BenchOptions {
  const options = { ...DEFAULTS };
  for (const key of Object.keys(ENV) as (keyof BenchOptions)[]) {
    const raw = process.env[ENV[key]];
    if (raw) options[key] = positiveNumber(raw, ENV[key]);
  }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split("=", 2) as [string, string | undefined];
    const key = FLAGS[flag];
    if (!key) throw new Error(`unknown option ${flag}; expected one of ${Object.keys(FLAGS).join(", ")}`);
    options[key] = positiveNumber(inline ?? argv[++i] ?? "", flag);
  }
  return options;
}

function positiveNumber(raw: string, name: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<number> {
  const options = readOptions(process.argv.slice(2));
  const key = "sk-bench-0000000000000000";
  const provider = await startFakeProvider({ validKeys: [key], latencyMs: options.latencyMs, requestsPerMinute: options.rpm });
  const llm = new LlmClient({ apiKey: key, baseURL: provider.url, concurrency: options.concurrency });

  const boundRateMs = (options.calls / options.rpm) * 60_000;
  const boundSlotsMs = (options.calls * options.latencyMs) / options.concurrency;
  const boundMs = Math.max(boundRateMs, boundSlotsMs);
  console.log(
    `LLM layer bench: ${options.calls} calls, provider latency ${options.latencyMs} ms, ` +
      `limit ${options.rpm} requests/min, concurrency ${options.concurrency}`,
  );

  const callTimes: number[] = [];
  const started = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: options.calls }, async (_, i) => {
      const callStarted = performance.now();
      const result = await llm.structured({
        model: "llm-5-nano",
        schema: SampleDecision,
        schemaName: "bench_decision",
        system: "You screen studies for a systematic review. Answer with the decision schema.",
        user: `Study ${i}: a randomised controlled trial of an intervention in adults.`,
        reasoningEffort: "minimal",
      });
      callTimes.push(performance.now() - callStarted);
      return result;
    }),
  );
  const wallMs = performance.now() - started;
  await provider.close();

  const failures = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  const reached429 = failures.filter((r) => (r.reason as { category?: unknown }).category === "rate_limit").length;
  const chat = provider.chatRequests();
  const sent429 = chat.filter((r) => r.status === 429).length;
  const costUsd = results.reduce((sum, r) => sum + (r.status === "fulfilled" ? r.value.usage.cost_usd : 0), 0);
  const ratio = wallMs / boundMs;
  const sorted = [...callTimes].sort((a, b) => a - b);

  const rows: [string, string][] = [
    ["wall time", `${(wallMs / 1000).toFixed(2)} s`],
    [
      "theoretical bound",
      `${(boundMs / 1000).toFixed(2)} s  (rate ${(boundRateMs / 1000).toFixed(2)} s, slots ${(boundSlotsMs / 1000).toFixed(2)} s)`,
    ],
    ["wall / bound", `${ratio.toFixed(3)}  (${ratio <= 1.1 ? "within" : "NOT within"} 10%)`],
    ["achieved rate", `${((options.calls / wallMs) * 60_000).toFixed(0)} requests/min`],
    ["HTTP requests sent", String(chat.length)],
    ["429s sent by provider", String(sent429)],
    ["429s reaching callers", String(reached429)],
    ["failed calls", String(failures.length)],
    ["call time p50 / p95 / max", `${percentile(sorted, 50).toFixed(0)} / ${percentile(sorted, 95).toFixed(0)} / ${(sorted.at(-1) ?? 0).toFixed(0)} ms (queueing included)`],
    ["estimated cost", `$${costUsd.toFixed(6)}`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);

  for (const failure of failures.slice(0, 5)) console.error(`  failure: ${String((failure.reason as Error).message ?? failure.reason)}`);
  return failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
