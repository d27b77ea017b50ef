import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { once } from "node:events";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { readEventStream } from "../support/sse";
import { startStack, waitFor, type HttpResult, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "../e2e/screening-fixtures";
import type { AttackOp, AttackPlan } from "./support/owner-attacker";
import { slowLimitsProxy, type SlowLimitsProxy } from "./support/slow-limits-proxy";

/**
 * One tenant cannot break reads or creations for another (issue 27, attacks H1–H3 and M1–M3),
 * through HTTP only. Two owners: mallory storms exports and reports of her finished job (H1, M2),
 * runs validations, which read the whole job (H3), grabs event-stream slots (M3) and fills
 * storage with jobs (M1), all at once; meanwhile alice polls, exports, streams, lists and creates.
 * Jepsen's discipline: every request's answer and latency go into a history, the checker counts
 * what succeeded (an all-error run cannot pass) and checks the invariants over it: alice sees no
 * 5xx and no 429, her p99 stays under 1 s; mallory is answered 429 (with Retry-After) or 413,
 * each naming its limit.
 *
 * Issue 40: two gateways, both reaching the limits bucket through a proxy that delays its
 * messages by 3 s during the attack (longer than any wait for it), so each gateway decides on its
 * share of every limit; mallory's mix adds validation draws, sample downloads and event streams of
 * her finished job, all heavy reads; and each gateway's RSS is sampled throughout (< 512 MiB).
 */

const KEYS = { alice: "alice-use-key-0123456789abcdef", mallory: "mallory-use-key-0123456789abcdef", bob: "bob-use-key-0123456789abcdef" };
type Owner = keyof typeof KEYS;
// The bench (`npm run bench -- fair-owners`) runs longer attacks: past the 15 s lease of the gateways' beats.
const ATTACK_MS = Number(process.env.FAIR_OWNERS_ATTACK_MS ?? 5_000);
const BASELINE_MS = Number(process.env.FAIR_OWNERS_BASELINE_MS ?? 2_000);
const LIMITS_DELAY_MS = 3_000;
const RSS_LIMIT_MB = 512;
const PROBE_DIR = process.env.FAIR_OWNERS_PROBE_DIR;
const LIMITS = { KEY_RATE_PER_S: "40", KEY_RATE_BURST: "60", KEY_HEAVY_CONCURRENCY: "2", EVENT_STREAMS_PER_OWNER: "4", OWNER_STORAGE_MB: "5", OWNER_MAX_LIVE_JOBS: "6" };

interface Op {
  who: Owner;
  op: string;
  status: number;
  ms: number;
  retryAfter: number | null;
  detail: string;
}

/** Runs the attacker (support/owner-attacker.ts) at the lowest CPU priority and returns its history. */
async function attacker(plan: AttackPlan): Promise<AttackOp[]> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "support/owner-attacker.ts");
  const child = spawn("nice", ["-n", "19", process.execPath, "--import", "tsx", script, JSON.stringify(plan)], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (data: Buffer) => (out += data.toString()));
  child.stderr.on("data", (data: Buffer) => (err += data.toString()));
  const [code] = (await once(child, "close")) as [number | null];
  if (code !== 0) throw new Error(`attacker exited ${code}: ${err.slice(-2000)}`);
  return JSON.parse(out) as AttackOp[];
}

/** Each gateway's peaks during the attack, from support/gateway-probe.mjs's series (after its last write). */
function probeSummary(dir: string, pids: number[], since: number): string {
  return pids
    .map((pid) => {
      const series = (JSON.parse(readFileSync(join(dir, `${pid}.json`), "utf8")) as Record<string, number>[]).filter((s) => s.t! >= since);
      const peak = (key: string) => Math.max(...series.map((s) => s[key]!));
      const sum = (key: string) => series.reduce((total, s) => total + (s[key] ?? 0), 0);
      const blocked = series.filter((s) => s.loopMaxMs! > 100).length;
      // Its body-parsing thread (services/gateway/src/off-loop-parse.ts), each run of it a file of its own.
      const threads = readdirSync(dir).filter((f) => f.startsWith(`${pid}-thread`) && f.endsWith(".json"));
      const threadHeap = Math.max(0, ...threads.flatMap((f) => (JSON.parse(readFileSync(join(dir, f), "utf8")) as Record<string, number>[]).map((s) => s.heapTotal!)));
      return `gateway ${pid} peaks: heapUsed ${peak("heapUsed")} heapTotal ${peak("heapTotal")} external ${peak("external")} arrayBuffers ${peak("arrayBuffers")} MB, body thread heapTotal ${threadHeap} MB, loop delay max ${peak("loopMaxMs")} ms (${blocked} of ${series.length} quarter-seconds over 100 ms), GC pause max ${peak("gcMaxMs")} ms, GC ${sum("gcMs")} ms in all; `;
    })
    .join("");
}

/** Refusals by the setting each names (KEY_RATE_PER_S, OWNER_STORAGE_MB, …). */
const refusalCauses = (ops: Op[]) => ops.reduce<Record<string, number>>((acc, h) => {
  const cause = /\b(KEY_[A-Z_]+|OWNER_[A-Z_]+|EVENT_[A-Z_]+)\b/.exec(h.detail)?.[1] ?? "other";
  acc[cause] = (acc[cause] ?? 0) + 1;
  return acc;
}, {});

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)] ?? NaN;
const detailOf = (body: unknown) => JSON.stringify((body as { detail?: unknown } | undefined)?.detail ?? "");

describe("two owners, one attacking (real stack: gateway, screening, fake provider)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  let proxy: SlowLimitsProxy | undefined;
  const history: Op[] = [];

  beforeAll(async () => {
    // Only mallory's one metered job reaches the provider: slow, so it stays running for the streams.
    provider = await startFakeProvider({ latencyMs: 4_000 });
    stack = await startStack({
      gateways: 2,
      gatewayEnv: async (natsUrl) => {
        proxy = await slowLimitsProxy(natsUrl);
        // The bench's probe (support/gateway-probe.mjs): heap vs buffers and the event loop's delay, per gateway.
        const probe = PROBE_DIR ? { NODE_OPTIONS: [`--import=${join(dirname(fileURLToPath(import.meta.url)), "support/gateway-probe.mjs")}`, process.env.NODE_OPTIONS].filter(Boolean).join(" ") } : {};
        return { NATS_URL: proxy.url, ...probe };
      },
      services: { screening: 1 },
      env: { API_KEYS: `alice:use:${KEYS.alice},mallory:use:${KEYS.mallory},bob:use:${KEYS.bob}`, OPENAI_API_KEY: "sk-fair-owners-server", OPENAI_BASE_URL: provider.url, ...LIMITS },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await proxy?.close();
    await provider?.close();
  });

  let turn = 0;
  /** One request, to each gateway in turn, recorded in the history. */
  async function call(who: Owner, op: string, method: string, path: string, body?: unknown): Promise<HttpResult> {
    const started = performance.now();
    const baseUrl = stack.gatewayUrls[turn++ % stack.gatewayUrls.length];
    // A connection that fails names its request (a gateway that died mid-attack did so once).
    const res = await stack.http(method, path, body, { headers: { "x-api-key": KEYS[who] }, baseUrl }).catch((error: unknown) => {
      throw new Error(`${who} ${op} ${method} ${path} on ${baseUrl} failed after ${(performance.now() - started).toFixed(0)} ms: ${String(error)}`, { cause: error });
    });
    const retryAfter = res.headers.get("retry-after");
    history.push({ who, op, status: res.status, ms: performance.now() - started, retryAfter: retryAfter === null ? null : Number(retryAfter), detail: res.status >= 400 ? detailOf(res.body) : "" });
    return res;
  }

  const createJob = (who: Owner, papers: unknown[], extra: Record<string, unknown> = {}) => call(who, "create", "POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 1, mock: true, ...extra });

  async function finishedJob(who: Owner, papers: number): Promise<string> {
    const created = await createJob(who, screeningPapers(papers));
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.job_id as string;
    await waitFor(async () => (await stack.http("GET", `/v1/screening/jobs/${id}`, undefined, { headers: { "x-api-key": KEYS[who] } })).body?.status === "completed", 30_000);
    return id;
  }

  it("keeps alice's polls, exports, streams and creations answering while mallory attacks, and refuses mallory by her own limits", async () => {
    const alicesJob = await finishedJob("alice", 20);
    const mallorysJob = await finishedJob("mallory", 100);
    const running = await createJob("mallory", screeningPapers(2), { mock: false, project_id: 1 });
    expect(running.status).toBe(200);
    const runningId = running.body.job_id as string;
    const drawn = await stack.http("POST", `/v1/screening/jobs/${mallorysJob}/validation-samples`, { size: 50 }, { headers: { "x-api-key": KEYS.mallory } });
    expect(drawn.status, JSON.stringify(drawn.body)).toBe(200);
    const streamUrl = (id: string) => `${stack.baseUrl}/v1/screening/jobs/${id}/events`;

    const loop = async (until: number, body: () => Promise<unknown>) => {
      while (Date.now() < until) await body();
    };
    // The victim: one client at a steady pace, well within her own allowance.
    let n = 0;
    const victim = async (ms: number) => {
      const own = readEventStream(streamUrl(alicesJob), { headers: { "x-api-key": KEYS.alice }, timeoutMs: 10_000 });
      await loop(Date.now() + ms, async () => {
        // Polls are what a client does most (and enough samples make the p99 more than the one slowest answer).
        for (let i = 0; i < 3; i++) await call("alice", "poll", "GET", `/v1/screening/jobs/${alicesJob}`);
        await call("alice", "export", "GET", `/v1/screening/jobs/${alicesJob}/export?format=csv`);
        if (n % 3 === 0) await createJob("alice", screeningPapers(3), { project_id: 1_000 + n });
        if (n % 5 === 0) await call("alice", "list", "GET", "/v1/screening/jobs?limit=20");
        n++;
        await new Promise((r) => setTimeout(r, 20));
      });
      const stream = await own;
      history.push({ who: "alice", op: "stream", status: stream.status, ms: 0, retryAfter: null, detail: stream.events.at(-1)?.event ?? "" });
    };

    // Baseline: the victim alone on this (shared, loaded) machine, in the same run.
    history.length = 0;
    await victim(BASELINE_MS);
    const baseline = history.splice(0).filter((h) => h.op !== "stream");
    const baselineP99 = percentile(baseline.map((h) => h.ms), 99);
    expect(baseline.every((h) => h.status === 200)).toBe(true);

    // The attack, from its own process, while the victim goes on; the limits bucket answers 3 s late meanwhile.
    await proxy!.setDelay(LIMITS_DELAY_MS);
    const gatewayPids = stack.processes.filter((p) => p.name === "gateway").map((p) => p.child.pid!);
    const rssMb = gatewayPids.map(() => 0);
    const sampler = setInterval(() => {
      gatewayPids.forEach((pid, i) => {
        const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
        rssMb[i] = Math.max(rssMb[i]!, kb / 1024);
      });
    }, 100);
    const plan: AttackPlan = {
      baseUrls: stack.gatewayUrls,
      sampleId: drawn.body.sample_id as string,
      key: KEYS.mallory,
      attackMs: ATTACK_MS,
      finishedJob: mallorysJob,
      runningJob: runningId,
      labels: screeningPapers(20).map((p, i) => ({ id: p.id, included: i % 3 === 0 })),
      criteria: CRITERIA,
      streams: 12,
    };
    const attackStart = Date.now();
    const [attack] = await Promise.all([attacker(plan), victim(ATTACK_MS)]).finally(() => clearInterval(sampler));
    const probed = PROBE_DIR ? probeSummary(PROBE_DIR, gatewayPids, attackStart) : "";
    const delayed = await proxy!.setDelay(0);
    for (const op of attack) history.push({ who: "mallory", ms: 0, ...op });

    // The checker.
    const of = (who: Owner) => history.filter((h) => h.who === who);
    const alice = of("alice");
    const aliceOk = alice.filter((h) => h.status === 200);
    const latencies = alice.filter((h) => h.op !== "stream").map((h) => h.ms);
    const p99 = percentile(latencies, 99);
    const byStatus = (ops: Op[]) => ops.reduce<Record<string, number>>((acc, h) => ((acc[`${h.op} ${h.status}`] = (acc[`${h.op} ${h.status}`] ?? 0) + 1), acc), {});
    const mallory = of("mallory");
    // Per operation, alone and under attack (the issue-40 acceptance names polls, exports and creations).
    const opP99 = (ops: Op[], op: string) => percentile(ops.filter((h) => h.op === op).map((h) => h.ms), 99);
    const perOp = ["poll", "export", "create"].map((op) => `${op} ${opP99(baseline, op).toFixed(0)} → ${opP99(alice, op).toFixed(0)} ms`).join(", ");
    console.log(
      `fair owners (load ${loadavg()[0]!.toFixed(2)}): p99 alone → under attack: ${perOp}; ` +
        `alice alone ${baseline.length} requests, p99 ${baselineP99.toFixed(0)} ms; under attack ${aliceOk.length}/${alice.length} ok, ` +
        `p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms ${JSON.stringify(byStatus(alice))}; mallory ${mallory.length} requests ${JSON.stringify(byStatus(mallory))}; ` +
        `mallory's creations refused for ${JSON.stringify(refusalCauses(mallory.filter((h) => h.op === "create" && h.status === 429)))}; ` +
        `limits bucket messages delayed ${delayed}; gateways' peak RSS ${rssMb.map((mb) => mb.toFixed(0)).join(" and ")} MB; ` +
        `${probed}alice's slowest: ${alice.filter((h) => h.op !== "stream").sort((x, y) => y.ms - x.ms).slice(0, 4).map((h) => `${h.op} ${h.ms.toFixed(0)} ms`).join(", ")}`,
    );

    // Alice: everything answered, nothing refused (no 5xx, no 429); p99 within 3× her own p99
    // measured alone in this run, or under 1 s (issue 27's bound: on a loaded machine a p99 of a
    // few dozen samples is noise). `npm run bench -- fair-owners` holds it to 3× strictly, per
    // operation too (issue 40's acceptance), several runs over.
    expect(alice.filter((h) => h.status !== 200).map((h) => `${h.op} ${h.status} ${h.detail}`)).toEqual([]);
    for (const op of ["poll", "export", "create", "list"]) expect(aliceOk.filter((h) => h.op === op).length, op).toBeGreaterThanOrEqual(1);
    expect(aliceOk.length).toBeGreaterThanOrEqual(20);
    expect(alice.find((h) => h.op === "stream")).toMatchObject({ status: 200, detail: "end" });
    if (process.env.FAIR_OWNERS_STRICT === "1") {
      for (const op of ["poll", "export", "create"]) expect(opP99(alice, op), `${op} p99 within 3× alone`).toBeLessThan(3 * opP99(baseline, op));
      expect(p99).toBeLessThan(3 * baselineP99);
    } else expect(p99).toBeLessThan(Math.max(1_000, 3 * baselineP99));

    // Mallory: refused by her own limits, never by a failure of the shared service.
    expect(mallory.filter((h) => h.status >= 500).map((h) => `${h.op} ${h.status} ${h.detail}`)).toEqual([]);
    for (const refused of mallory.filter((h) => h.status === 429)) {
      expect(refused.retryAfter).toBeGreaterThanOrEqual(1);
      expect(refused.detail).toMatch(/"error_code":"rate_limit"/);
    }
    const refusedFor = (op: string, limit: RegExp) => mallory.filter((h) => h.op === op && h.status === 429 && limit.test(h.detail)).length;
    expect(refusedFor("export", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S/) + refusedFor("report", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S/)).toBeGreaterThan(0);
    expect(refusedFor("validation", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S/)).toBeGreaterThan(0);
    expect(mallory.filter((h) => h.op === "stream" && h.status === 200).length).toBeLessThanOrEqual(4);
    expect(refusedFor("stream", /EVENT_STREAMS_PER_OWNER/)).toBeGreaterThan(0);
    expect(refusedFor("create", /OWNER_STORAGE_MB|OWNER_MAX_LIVE_JOBS/)).toBeGreaterThan(0);
    expect(mallory.filter((h) => h.op === "create" && h.status === 413 && /OWNER_STORAGE_MB/.test(h.detail))).toHaveLength(1);
    // Issue 40: the whole-job reads count as heavy, across both gateways, with the bucket slowed;
    // each gateway kept to its share of the streams (4 ÷ 2), and stayed well under a pod's memory.
    expect(delayed).toBeGreaterThan(0);
    for (const op of ["draw", "download", "finished-stream"]) {
      expect(mallory.filter((h) => h.op === op && (h.status === 200 || h.status === 429)).length, op).toBeGreaterThan(0);
    }
    expect(refusedFor("draw", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S|KEY_CONCURRENCY/) + refusedFor("download", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S|KEY_CONCURRENCY/) + refusedFor("finished-stream", /KEY_HEAVY_CONCURRENCY|KEY_RATE_PER_S/)).toBeGreaterThan(0);
    expect(Math.max(...rssMb)).toBeLessThan(RSS_LIMIT_MB);
    // And she was served within her limits too (a checker that passed an attacker refused outright would prove nothing).
    expect(mallory.filter((h) => h.status === 200 && (h.op === "export" || h.op === "report")).length).toBeGreaterThan(0);
  }, 60_000 + 2 * ATTACK_MS + BASELINE_MS);

  it("forgets a creation's storage refusal on every gateway once the owner's job ends: the next creation is not refused from memory", async () => {
    // 100 papers of 14 KB abstracts: each job reserves about 3.2 MB of bob's 5 MB (its input, and
    // results with the texts); once one has ended it keeps about 1.7 MB until its results expire.
    const papers = screeningPapers(100).map((p) => ({ ...p, abstract: `${p.abstract} ${"x".repeat(14_000)}` }));
    const create = (gateway: number, mock: boolean, project: number) =>
      stack.http("POST", "/v1/screening/jobs", { papers, criteria: CRITERIA, repetitions: 1, mock, project_id: project }, { headers: { "x-api-key": KEYS.bob }, baseUrl: stack.gatewayUrls[gateway] });
    const admittedAt = Date.now();
    const running = await create(0, false, 501); // the provider answers in 4 s: it stays running
    expect(running.status, JSON.stringify(running.body)).toBe(200);
    const jobUrl = `/v1/screening/jobs/${running.body.job_id as string}`;
    for (const gateway of [0, 1]) {
      const refused = await create(gateway, true, 502);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe("60"); // the service's: until a live job may have ended
      expect(JSON.stringify(refused.body)).toMatch(/OWNER_STORAGE_MB/);
    }
    expect((await stack.http("POST", `${jobUrl}/cancel`, undefined, { headers: { "x-api-key": KEYS.bob } })).status).toBe(200);
    await waitFor(async () => (await stack.http("GET", jobUrl, undefined, { headers: { "x-api-key": KEYS.bob } })).body?.status === "failed", 30_000, 50);
    // The service counts a job whose live state is gone as ended only 10 s after its admission
    // (an admission may still be writing it); each gateway would repeat its refusal for 60 s.
    await new Promise((r) => setTimeout(r, Math.max(0, admittedAt + 11_000 - Date.now())));
    const again = await create(1, true, 503);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
  }, 60_000);

  it("counts polls of a large finished job (streamed in parts) as heavy reads, and never small polls", async () => {
    const small = await finishedJob("alice", 3);
    // Short abstracts: a body over one part (1 MiB), an input well within the storage quota
    // (alice's: mallory's storage is still held by the attack's jobs).
    const big = await createJob("alice", screeningPapers(2_500).map((p) => ({ ...p, abstract: "a" })), { project_id: 7 });
    expect(big.status, JSON.stringify(big.body)).toBe(200);
    const id = big.body.job_id as string;
    const poll = (who: Owner, job: string) => stack.http("GET", `/v1/screening/jobs/${job}`, undefined, { headers: { "x-api-key": KEYS[who] } });
    await waitFor(async () => (await poll("alice", id)).body?.status === "completed", 60_000, 250);
    expect(JSON.stringify((await poll("alice", id)).body).length).toBeGreaterThan(1024 * 1024);

    // Twelve at once: beyond the two heavy places (KEY_HEAVY_CONCURRENCY=2) while the others stream, a poll is refused…
    // (On a busy machine twelve polls may reach the gateway one after another, each sent before the
    // next arrives: up to ten bursts, until one overlapped; a second apart, so that the bursts stay
    // within alice's request rate, KEY_RATE_PER_S, which CI once saw refuse them first.)
    const large: HttpResult[] = [];
    for (let burst = 0; burst < 10 && !large.some((r) => r.status === 429); burst++) {
      if (burst > 0) await new Promise((r) => setTimeout(r, 1_000));
      large.push(...(await Promise.all(Array.from({ length: 12 }, () => poll("alice", id)))));
    }
    const refused = large.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(large.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(2);
    for (const r of refused) {
      expect(r.body.detail.message).toMatch(/KEY_HEAVY_CONCURRENCY/);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    expect(large.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    // …while polls of the small job are never counted, however many at once.
    const smallPolls = await Promise.all(Array.from({ length: 12 }, () => poll("alice", small)));
    expect(smallPolls.map((r) => r.status)).toEqual(Array(12).fill(200));
  }, 90_000);
});
