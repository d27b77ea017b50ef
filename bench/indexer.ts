/**
 * Throughput of an indexer job against a rate-limited provider, and the share of evidence quotes
 * the service verifies.
 *
 *   npm run bench -- indexer [--records 2000] [--rpm 3000] [--latency-ms 150] [--concurrency 16] [--invent 0.1]
 *   (or BENCH_RECORDS, BENCH_RPM, BENCH_LATENCY_MS, BENCH_CONCURRENCY, BENCH_INVENT)
 *
 * Starts a real stack (nats-server, gateway, one indexer process) and the fake provider, which
 * answers after L ms and enforces N requests per minute with 429s and x-ratelimit headers. A job of
 * K real records from nagtegaal_2019.csv (abstracts only, so every record is one provider call) is
 * created through the gateway and polled to completion. No schedule can beat
 * max(K/N minutes, K·L/C) with C calls in flight per job: the goal is a wall time within 10% of it.
 * The scripted model quotes the abstract (a third of the quotes copied loosely) and invents a quote
 * for a share of the fields; the report gives the share of claimed quotes the service verified.
 */
import type { FakeChatRequest } from "../libs/llm/src/testing/index";
import { startFakeProvider } from "../libs/llm/src/testing/index";
import { indexerRecords } from "../test/support/dataset";
import { extractionResponder } from "../services/indexer/src/testing/responder";
import { startStack } from "../test/support/stack";

interface Options {
  records: number;
  rpm: number;
  latencyMs: number;
  concurrency: number;
  invent: number;
}
const DEFAULTS: Options = { records: 2000, rpm: 3000, latencyMs: 150, concurrency: 16, invent: 0.1 };
const FLAGS: Record<string, keyof Options> = {
  "--records": "records",
  "--rpm": "rpm",
  "--latency-ms": "latencyMs",
  "--concurrency": "concurrency",
  "--invent": "invent",
};
const ENV: Record<keyof Options, string> = {
  records: "BENCH_RECORDS",
  rpm: "BENCH_RPM",
  latencyMs: "BENCH_LATENCY_MS",
  concurrency: "BENCH_CONCURRENCY",
  invent: "BENCH_INVENT",
};

function readOptions(argv: string[]): Options {
  const options = { ...DEFAULTS };
  for (const key of Object.keys(ENV) as (keyof Options)[]) {
    const raw = process.env[ENV[key]];
    if (raw) options[key] = nonNegative(raw, ENV[key]);
  }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = (argv[i] as string).split("=", 2) as [string, string | undefined];
    const key = FLAGS[flag];
    if (!key) throw new Error(`unknown option ${flag}; expected one of ${Object.keys(FLAGS).join(", ")}`);
    options[key] = nonNegative(inline ?? argv[++i] ?? "", flag);
  }
  return options;
}

function nonNegative(raw: string, name: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

const FIELDS = [
  { name: "study_design", description: "Design of the study", data_type_primary: "text" },
  { name: "sample_size", description: "Number of participants", data_type_primary: "number", data_type_secondary: "count" },
  { name: "significant_effect", description: "Whether a significant effect is reported", data_type_primary: "yes_no" },
  { name: "outcomes", description: "Outcomes measured", data_type_primary: "list_text", depth: "full" },
  { name: "percentages", description: "Percentages reported", data_type_primary: "list_number", data_type_secondary: "percentage" },
];

async function main(): Promise<number> {
  const options = readOptions(process.argv.slice(2));
  const records = indexerRecords(options.records, { withAbstractOnly: true });
  const key = "sk-bench-indexer-000000000000";

  // Count what the scripted model claims, to compare with what the service keeps.
  const script = extractionResponder({ invent: (record, field) => fraction(`${record.title}/${field}`) < options.invent });
  let claimed = 0;
  let invented = 0;
  const provider = await startFakeProvider({
    validKeys: [key],
    latencyMs: options.latencyMs,
    requestsPerMinute: options.rpm,
    respond: (request: FakeChatRequest) => {
      const reply = script(request) as Record<string, { evidence: { quote: string }[] }> | undefined;
      for (const field of Object.values(reply ?? {})) {
        claimed += field.evidence.length;
        invented += field.evidence.filter((e) => e.quote.startsWith("zqx invented")).length;
      }
      return reply;
    },
  });
  const stack = await startStack({
    services: { indexer: 1 },
    env: {
      OPENAI_API_KEY: key,
      OPENAI_BASE_URL: provider.url,
      INDEXER_JOB_RECORD_CONCURRENCY: String(options.concurrency),
      LLM_CONCURRENCY: String(Math.max(16, options.concurrency)),
    },
  });

  try {
    const boundRateMs = (records.length / options.rpm) * 60_000;
    const boundSlotsMs = (records.length * options.latencyMs) / options.concurrency;
    const boundMs = Math.max(boundRateMs, boundSlotsMs);
    console.log(
      `Indexer job bench: ${records.length} records × ${FIELDS.length} fields, provider latency ${options.latencyMs} ms, ` +
        `limit ${options.rpm} requests/min, ${options.concurrency} calls in flight per job`,
    );

    const createdAt = Date.now();
    const created = await stack.http("POST", "/v1/indexer/jobs", { records, fields: FIELDS });
    if (created.status !== 200) throw new Error(`job creation failed: ${created.status} ${JSON.stringify(created.body).slice(0, 300)}`);
    const id = created.body.job_id as string;
    let job: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- the poll body, checked below
    let polls = 0;
    for (;;) {
      // A client's polling, partial results included; the end is taken from the job's own completed_at.
      job = (await stack.http("GET", `/v1/indexer/jobs/${id}`)).body;
      polls++;
      if (job.status === "completed" || job.status === "failed") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const wallMs = Date.parse(job.completed_at) - createdAt;
    if (job.status !== "completed") throw new Error(`job ${job.status}: ${job.error}`);

    const results = job.partial_results as Record<string, unknown>[];
    let verified = 0;
    let normalized = 0;
    let inventedReturned = 0;
    for (const result of results) {
      for (const field of FIELDS) {
        for (const e of (result[field.name] as { evidence: { match: string; quote: string }[] }).evidence) {
          verified++;
          if (e.match === "normalized") normalized++;
          if (e.quote.includes("zqx invented")) inventedReturned++;
        }
      }
    }
    const chats = provider.chatRequests();
    const sent429 = chats.filter((r) => r.status === 429).length;
    const ratio = wallMs / boundMs;
    const estimate = await stack.http("POST", "/v1/indexer/estimate", { fields: FIELDS, record_count: records.length });

    const rows: [string, string][] = [
      ["wall time (create → completed)", `${(wallMs / 1000).toFixed(2)} s  (job duration_ms ${job.duration_ms})`],
      ["theoretical bound", `${(boundMs / 1000).toFixed(2)} s  (rate ${(boundRateMs / 1000).toFixed(2)} s, slots ${(boundSlotsMs / 1000).toFixed(2)} s)`],
      ["wall / bound", `${ratio.toFixed(3)}  (${ratio <= 1.1 ? "within" : "NOT within"} 10%)`],
      ["records per second", `${((records.length / wallMs) * 1000).toFixed(1)}  (bound ${((records.length / boundMs) * 1000).toFixed(1)})`],
      ["records returned / ok", `${results.length} / ${results.filter((r) => r.indexing_status === "ok").length}`],
      ["provider requests / 429s sent", `${chats.length} / ${sent429}`],
      ["quotes claimed by the model", `${claimed}  (${invented} invented on purpose)`],
      [
        "evidence elements verified",
        `${verified}  (${((Math.min(verified, claimed - invented) / Math.max(1, claimed - invented)) * 100).toFixed(1)}% of genuine quotes, ` +
          `${((verified / Math.max(1, claimed)) * 100).toFixed(1)}% of all claimed; ${normalized} by normalised match; ` +
          `a quote the abstract itself elides with "…" counts once per fragment)`,
      ],
      ["invented quotes returned", String(inventedReturned)],
      ["usage: input / output tokens", `${job.usage.input_tokens} / ${job.usage.output_tokens}  (estimate ${estimate.body.estimated_input_tokens} / ${estimate.body.estimated_output_tokens})`],
      ["cost: actual / estimated", `$${job.usage.estimated_cost_usd} / $${estimate.body.estimated_cost_usd}`],
      ["polls while running", String(polls)],
    ];
    const width = Math.max(...rows.map(([label]) => label.length));
    for (const [label, value] of rows) console.log(`  ${label.padEnd(width)}  ${value}`);
    return results.length === records.length && inventedReturned === 0 ? 0 : 1;
  } finally {
    await stack.stop();
    await provider.close();
  }
}

/** A stable number in [0, 1) for a string: which fields get an invented quote. */
function fraction(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0;
  return h / 2 ** 32;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
