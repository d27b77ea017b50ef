/**
 * Load benchmark for the gateway (docs/performance.md).
 *
 *   tsx bench/load.ts [scenario …]            # default: every scenario, against a stack it starts
 *   BENCH_URL=http://127.0.0.1:8000 BENCH_API_KEY=… tsx bench/load.ts poll mixed
 *
 * Scenarios:
 *   hello     bare fastify hello-world route in its own process: the machine's ceiling
 *   health    GET /health through the gateway (auth-free, no NATS hop)
 *   criteria  POST /v1/criteria/analyze-question, mock (one NATS request-reply per call)
 *   poll      GET /v1/screening/jobs/{id} of one running job
 *   mixed     polls and mock job creations at fixed rates side by side, then waits until every
 *             accepted job is terminal and reports how long that took
 *
 * Without BENCH_URL it starts its own stack (test/support/stack.ts: nats-server, one gateway,
 * criteria and screening). Loopback only; every run is bounded in requests and in seconds.
 * Knobs (env): BENCH_CONNECTIONS (10), BENCH_SECONDS (10 per max-throughput run, after a 2 s
 * warm-up), BENCH_AMOUNT (1,000,000: request cap per run), BENCH_POLL_RATE (500/s), BENCH_CREATE_RATE (20/s),
 * BENCH_MIXED_SECONDS (10), BENCH_POLL_JOB_ID (a running job to poll, with BENCH_URL),
 * BENCH_JSON (write the results to this file too).
 */
import autocannon from "autocannon";
import type { ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { startFakeProvider, type FakeProvider } from "../libs/llm/src/testing";
import { startHelloServer } from "./support/hello";
import { ROOT, stopProcess } from "../scripts/lib/launch";
import { TEST_API_KEY, startStack, type Stack } from "../test/support/stack";
import { knob } from "./support/knobs";

const SCENARIOS = ["hello", "health", "criteria", "poll", "mixed"] as const;
type Scenario = (typeof SCENARIOS)[number];

const settings = {
  connections: knob("BENCH_CONNECTIONS", 10),
  seconds: knob("BENCH_SECONDS", 10),
  amount: knob("BENCH_AMOUNT", 1_000_000),
  pollRate: knob("BENCH_POLL_RATE", 500),
  createRate: knob("BENCH_CREATE_RATE", 20),
  mixedSeconds: knob("BENCH_MIXED_SECONDS", 10),
  warmupSeconds: 2,
};

interface Row {
  scenario: string;
  requests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  note?: string;
}

const MOCK_JOB = {
  papers: [
    { id: "p1", title: "Exercise and depression in adults", abstract: "A randomised trial of 120 adults." },
    { id: "p2", title: "Diet and sleep", abstract: "An observational cohort of 3,000 participants." },
    { id: "p3", title: "Yoga for back pain", abstract: "A pilot study with 24 participants." },
  ],
  criteria: [{ name: "population", type: "include", value: "Adults" }],
  repetitions: 1,
  mock: true,
};

/**
 * The job the poll scenarios watch must stay `running` for the whole run: a terminal job leaves live
 * state at its first poll and, without MongoDB, answers 404 after, which would measure the wrong
 * path. On its own stack the benchmark points the services at a fake provider that never answers,
 * so a real (non-mock) job waits in its first stage; against BENCH_URL, pass a running job's id
 * in BENCH_POLL_JOB_ID.
 */
const LIVE_JOB = { ...MOCK_JOB, mock: false };

function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (!["127.0.0.1", "localhost", "[::1]", "::1"].includes(host)) {
    throw new Error(`BENCH_URL must point at this machine (loopback), not ${host}`);
  }
}

/**
 * One bounded autocannon run: stops after `amount` responses or `seconds`, whichever comes first.
 * Throughput is counted here, responses over the wall time to the last one: autocannon's own
 * run time is quantised to whole-second ticks, which caps a short run's figure at a divisor of it.
 */
async function cannon(scenario: string, options: autocannon.Options, limits: { amount: number; seconds: number }, note?: string): Promise<Row> {
  let timer: NodeJS.Timeout | undefined;
  let responses = 0;
  let lastAt = 0;
  const startedAt = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { connections: settings.connections, timeout: 10, ...options, duration: limits.seconds + 5 },
      (error, done) => (error ? reject(error) : resolve(done)),
    );
    instance.on("response", () => {
      responses += 1;
      lastAt = performance.now();
      if (responses === limits.amount) instance.stop();
    });
    timer = setTimeout(() => instance.stop(), limits.seconds * 1000);
  }).finally(() => clearTimeout(timer));
  const row: Row = {
    scenario,
    requests: responses,
    rps: Math.round((responses * 1000) / Math.max(lastAt - startedAt, 1)),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
  const codes = Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => `${code}×${stat.count ?? 0}`);
  row.note = [note, codes.length > 1 || row.non2xx > 0 ? `statuses ${codes.join(" ")}` : undefined].filter(Boolean).join("; ") || undefined;
  return row;
}

/** Max throughput for `seconds` (or `amount` responses), after a warm-up that is thrown away. */
async function saturate(scenario: string, options: autocannon.Options, note?: string): Promise<Row> {
  await cannon(`${scenario} (warm-up)`, options, { amount: Number.MAX_SAFE_INTEGER, seconds: settings.warmupSeconds });
  return cannon(scenario, options, { amount: settings.amount, seconds: settings.seconds }, note);
}

async function createJob(base: string, headers: Record<string, string>, job: unknown = MOCK_JOB): Promise<{ status: number; jobId?: string }> {
  const res = await fetch(`${base}/v1/screening/jobs`, { method: "POST", headers, body: JSON.stringify(job) });
  const body = (await res.json().catch(() => ({}))) as { job_id?: string };
  return body.job_id ? { status: res.status, jobId: body.job_id } : { status: res.status };
}

/** Polls every job until terminal (bounded); returns how many finished and when the last one did. */
async function drain(base: string, headers: Record<string, string>, jobIds: string[], timeoutMs: number) {
  const started = Date.now();
  const pending = new Set(jobIds);
  const outcome = { completed: 0, failed: 0 };
  while (pending.size > 0 && Date.now() - started < timeoutMs) {
    const batch = [...pending].slice(0, 50);
    await Promise.all(
      batch.map(async (id) => {
        const res = await fetch(`${base}/v1/screening/jobs/${id}`, { headers });
        if (res.status !== 200) return;
        const job = (await res.json()) as { status: string };
        if (job.status === "completed" || job.status === "failed") {
          pending.delete(id);
          outcome[job.status] += 1;
        }
      }),
    );
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 200));
  }
  return { ...outcome, unfinished: pending.size, drainMs: Date.now() - started };
}

function printTable(rows: Row[]): void {
  const header = "| scenario | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | errors | timeouts | note |";
  console.log(`\n${header}\n${header.replace(/[^|]/g, "-")}`);
  for (const r of rows) {
    console.log(`| ${r.scenario} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.max} | ${r.non2xx} | ${r.errors} | ${r.timeouts} | ${r.note ?? ""} |`);
  }
}

async function main(): Promise<void> {
  const requested = process.argv.slice(2) as Scenario[];
  for (const s of requested) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}; one of ${SCENARIOS.join(", ")}`);
  const scenarios = requested.length ? requested : [...SCENARIOS];

  let stack: Stack | undefined;
  let provider: FakeProvider | undefined;
  let base = process.env.BENCH_URL;
  const apiKey = process.env.BENCH_API_KEY ?? (base ? undefined : TEST_API_KEY);
  if (!apiKey) throw new Error("BENCH_API_KEY is required with BENCH_URL");
  if (!base) {
    const services: Record<string, number> = { criteria: 1 };
    if (existsSync(join(ROOT, "services/screening/src/main.ts"))) services.screening = 1;
    // Provider calls hang until the client gives up (LLM_DEADLINE_MS): live jobs stay running.
    provider = await startFakeProvider({ mode: "hang" });
    stack = await startStack({
      services,
      // One key at full speed: the per-client limits (docs/limits.md) would measure themselves, not the gateway.
      env: { API_KEY: apiKey, OPENAI_API_KEY: "bench-fake-provider-key", OPENAI_BASE_URL: provider.url, LLM_DEADLINE_MS: "600000", KEY_CONCURRENCY: "0", KEY_RATE_PER_S: "0" },
    });
    base = stack.baseUrl;
    const owned = stack;
    // Ctrl-C must not leave the stack's processes behind.
    process.once("SIGINT", () => void owned.stop().then(() => provider?.close()).then(() => process.exit(130)));
  }
  assertLoopback(base);
  const headers = { "x-api-key": apiKey, "content-type": "application/json" };
  /** The running job the poll scenarios watch (created once). */
  let liveJob: Promise<{ status: number; jobId?: string }> | undefined;
  const runningJob = () =>
    (liveJob ??= process.env.BENCH_POLL_JOB_ID
      ? Promise.resolve({ status: 200, jobId: process.env.BENCH_POLL_JOB_ID })
      : createJob(base, headers, base === stack?.baseUrl ? LIVE_JOB : MOCK_JOB));

  console.log(`# bench/load.ts — ${new Date().toISOString()}`);
  console.log(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`gateway ${base}${stack ? " (stack started by this script)" : ""}; ${JSON.stringify(settings)}`);

  const rows: Row[] = [];
  const extra: Record<string, unknown> = {};
  let hello: { url: string; child: ChildProcess } | undefined;
  try {
    for (const scenario of scenarios) {
      switch (scenario) {
        case "hello": {
          hello = await startHelloServer();
          rows.push(await saturate("hello (bare fastify)", { url: `${hello.url}/hello` }));
          await stopProcess(hello.child);
          hello = undefined;
          break;
        }
        case "health":
          rows.push(await saturate("GET /health", { url: `${base}/health` }));
          break;
        case "criteria":
          rows.push(
            await saturate("POST /v1/criteria/analyze-question (mock)", {
              url: `${base}/v1/criteria/analyze-question`,
              method: "POST",
              headers,
              body: JSON.stringify({ research_question: "Does exercise reduce depression in adults?", mock: true }),
            }),
          );
          break;
        case "poll": {
          const job = await runningJob();
          if (!job.jobId) {
            rows.push({ scenario: "GET /v1/screening/jobs/{id}", requests: 0, rps: 0, p50: 0, p90: 0, p99: 0, max: 0, non2xx: 0, errors: 0, timeouts: 0, note: `skipped: job creation answered ${job.status}` });
            break;
          }
          rows.push(await saturate("GET /v1/screening/jobs/{id}", { url: `${base}/v1/screening/jobs/${job.jobId}`, headers }));
          const after = await fetch(`${base}/v1/screening/jobs/${job.jobId}`, { headers });
          const state = after.status === 200 ? ((await after.json()) as { status: string; progress: number }) : undefined;
          rows.at(-1)!.note = [rows.at(-1)!.note, `job ${state ? `${state.status} at ${Math.round(state.progress * 100)} %` : `answered ${after.status}`} after the run`].filter(Boolean).join("; ");
          break;
        }
        case "mixed": {
          const probe = await runningJob();
          if (!probe.jobId) {
            rows.push({ scenario: "mixed", requests: 0, rps: 0, p50: 0, p90: 0, p99: 0, max: 0, non2xx: 0, errors: 0, timeouts: 0, note: `skipped: job creation answered ${probe.status}` });
            break;
          }
          // The polled job is not in `created`: only the burst's jobs are drained.
          const created: string[] = [];
          const seconds = settings.mixedSeconds;
          const [polls, creations] = await Promise.all([
            cannon(
              `mixed: polls @ ${settings.pollRate}/s`,
              { url: `${base}/v1/screening/jobs/${probe.jobId}`, headers, overallRate: settings.pollRate },
              { amount: settings.pollRate * seconds, seconds: seconds + 10 },
            ),
            cannon(
              `mixed: creations @ ${settings.createRate}/s`,
              {
                url: base,
                overallRate: settings.createRate,
                connections: Math.min(settings.connections, 4),
                requests: [
                  {
                    method: "POST",
                    path: "/v1/screening/jobs",
                    headers,
                    body: JSON.stringify(MOCK_JOB),
                    onResponse: (status, body) => {
                      if (status === 200) created.push((JSON.parse(body) as { job_id: string }).job_id);
                    },
                  },
                ],
              },
              { amount: settings.createRate * seconds, seconds: seconds + 10 },
            ),
          ]);
          const drained = await drain(base, headers, created, 120_000);
          creations.note = `${created.length} accepted; ${drained.completed} completed, ${drained.failed} failed, ${drained.unfinished} unfinished; last terminal ${drained.drainMs} ms after the burst`;
          rows.push(polls, creations);
          extra.mixed = drained;
          break;
        }
      }
    }
  } finally {
    if (hello) await stopProcess(hello.child);
    await stack?.stop();
    await provider?.close();
  }

  printTable(rows);
  const helloRow = rows.find((r) => r.scenario.startsWith("hello"));
  if (helloRow) {
    for (const r of rows.filter((x) => x !== helloRow && !x.scenario.startsWith("mixed") && x.rps > 0)) {
      console.log(`${r.scenario}: ${(r.rps / helloRow.rps).toFixed(2)}× bare fastify`);
    }
  }
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ settings, rows, extra }, null, 2));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
