import { readEventStream } from "../../support/sse";

/**
 * The attacker of test/security/fair-owners.test.ts, in its own process (started at the lowest CPU
 * priority, as if on another machine, so its own work does not compete with the victim the test
 * times): with one key, spread over every gateway, it storms exports and reports of a finished
 * job, runs validations, draws and downloads validation samples, reads the finished job's event
 * stream, holds event streams of a running job and creates jobs that hold storage, all at once,
 * ignoring Retry-After, then prints every answer as JSON (`AttackOp[]`).
 *
 * Usage: owner-attacker.ts '<AttackPlan as JSON>'
 */

export interface AttackPlan {
  /** Every gateway: the attacker's requests go round them in turn. */
  baseUrls: string[];
  key: string;
  attackMs: number;
  /** A finished job of the attacker's: exported, reported, validated. */
  finishedJob: string;
  /** A running job of the attacker's: its event streams are held. */
  runningJob: string;
  labels: { id: string; included: boolean }[];
  /** A validation sample of the finished job: downloaded again and again. */
  sampleId: string;
  criteria: unknown[];
  streams: number;
}

export interface AttackOp {
  op: string;
  status: number;
  retryAfter: number | null;
  detail: string;
}

const plan = JSON.parse(process.argv[2]!) as AttackPlan;
const until = Date.now() + plan.attackMs;
const ops: AttackOp[] = [];
const headers = { "x-api-key": plan.key, "content-type": "application/json" };

let turn = 0;
const gateway = () => plan.baseUrls[turn++ % plan.baseUrls.length]!;

async function call(op: string, method: string, path: string, body?: unknown): Promise<void> {
  const res = await fetch(`${gateway()}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  const retryAfter = res.headers.get("retry-after");
  ops.push({ op, status: res.status, retryAfter: retryAfter === null ? null : Number(retryAfter), detail: res.status >= 400 ? text.slice(0, 500) : "" });
}

/** Requests back to back until the attack ends (a moment apart, so the loops share this process fairly). */
async function storm(body: () => Promise<void>): Promise<void> {
  while (Date.now() < until) {
    await body().catch((error: unknown) => ops.push({ op: "error", status: 0, retryAfter: null, detail: String(error) }));
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Papers whose abstracts make one job's input about `mb` MB (each abstract within MAX_ABSTRACT_CHARS). */
const bulky = (count: number, mb: number) =>
  Array.from({ length: count }, (_, i) => ({ id: `bulk-${i}`, title: `Bulk paper ${i}`, abstract: "x".repeat(Math.floor((mb * 1024 * 1024) / count)) }));
const create = (papers: unknown[], project: number) => call("create", "POST", "/v1/screening/jobs", { papers, criteria: plan.criteria, repetitions: 1, mock: true, project_id: project });

const job = `/v1/screening/jobs/${plan.finishedJob}`;
const leave = new AbortController();
let project = 100;
const streams = Array.from({ length: plan.streams }, () =>
  readEventStream(`${gateway()}/v1/screening/jobs/${plan.runningJob}/events`, { headers: { "x-api-key": plan.key }, signal: leave.signal, until: () => false, timeoutMs: plan.attackMs + 30_000 }).then(
    (read) => ops.push({ op: "stream", status: read.status, retryAfter: read.headers.get("retry-after") ? Number(read.headers.get("retry-after")) : null, detail: read.body.slice(0, 500) }),
  ),
);
await Promise.all([
  // H1, M2: exports and reports of the finished job, many at once.
  ...Array.from({ length: 8 }, (_, i) => storm(() => (i % 3 === 2 ? call("report", "GET", `${job}/report`) : call("export", "GET", `${job}/export?format=${i % 2 ? "csv" : "jsonl"}`)))),
  // H3: validations read the whole job.
  ...Array.from({ length: 3 }, () => storm(() => call("validation", "POST", `${job}/validation`, { labels: plan.labels }))),
  // Issue 40: validation draws and sample downloads read the whole job, and so does a finished job's event stream (its end event).
  ...Array.from({ length: 2 }, () => storm(() => call("draw", "POST", `${job}/validation-samples`, { size: 20 }))),
  ...Array.from({ length: 2 }, () => storm(() => call("download", "GET", `${job}/validation-samples/${plan.sampleId}/download?format=csv`))),
  ...Array.from({ length: 3 }, () => storm(() => call("finished-stream", "GET", `${job}/events`))),
  // M1: jobs that hold storage, three creators at once, and one job larger than the whole quota.
  ...Array.from({ length: 3 }, () => storm(() => create(bulky(40, 1.2), project++))),
  create(bulky(130, 6), 99),
]);
leave.abort();
await Promise.all(streams);
process.stdout.write(JSON.stringify(ops));
