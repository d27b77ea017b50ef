/**
 * `npm run eval -- screening --dataset NAME | --file PATH... --criteria FILE [options]`: screens a labelled
 * review through the running service's HTTP API (BASE_URL, API_KEY; LLM_API_KEY is sent as the
 * per-request provider key) and writes report.json, report.md and recall-workload.svg.
 * See docs/evaluation.md.
 */
import { constants } from "node:os";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { builtInNames, isJsonLines, loadBuiltIn, loadCriteriaFile, loadRecords, loadReferenceFiles, ROOT, type LabelledReview } from "./datasets";
import { startTimeoutFromEnv } from "../scripts/lib/start-wait";
import { startFakeStack, type FakeStack } from "./fake-stack";
import { writeReport, type ScreeningReport } from "./report";
import { evaluateScreening } from "./screening";

const USAGE = `usage: npm run eval -- screening (--dataset NAME | --file PATH... --criteria FILE) [options]

  --dataset NAME        built-in review: ${builtInNames().join(", ")}
  --file PATH           your own review (repeat for several files): JSON Lines of {id, title, abstract,
                        included}; CSV, comma or semicolon, with ASReview's columns title, abstract,
                        label_included (record_id optional); or RIS / PubMed NBIB exports labelled by
                        --included. Any may be gzipped (.gz). HTML in titles and abstracts is stripped
  --included PATH       the studies the review included (RIS, NBIB or CSV; repeatable): a record of
                        --file is labelled included when it matches one by DOI, PMID or title
  --merge-duplicates    screen one record per duplicate group (DOI, PMID, title) of the --file records
  --criteria FILE       eligibility criteria: .json ({criteria:[{name,type,value}], questions:[]}) or prose text
                        (required with --file; replaces a built-in review's criteria)
  --model M             model to screen with (default: the service's default)
  --repetitions R       votes per paper (default: the service's default, 5)
  --threshold T         the job's include threshold (default: the service's default, 1)
  --limit N             screen N records only, keeping the review's share of inclusions
  --target-recall X     recall the recommended threshold must reach (default 0.95)
  --out DIR             where the report goes (default .data/eval/<dataset>-<time>)
  --timeout-minutes M   give up waiting for the job after M minutes (default 240)
  --fake-oracle S,P     no provider: start a local stack whose fake provider answers from the labels,
                        each vote right with probability S (included papers) or P (excluded ones)
  --seed N              seed of the fake oracle (default 1)

environment: BASE_URL (default http://localhost:8000), API_KEY (service key),
             LLM_API_KEY (optional: your provider key, sent as X-LLM-API-Key)`;

const Rate = z.coerce.number().min(0).max(1);
const Options = z.object({
  dataset: z.string().optional(),
  file: z.array(z.string()).optional(),
  included: z.array(z.string()).optional(),
  "merge-duplicates": z.boolean().optional(),
  criteria: z.string().optional(),
  model: z.string().min(1).optional(),
  repetitions: z.coerce.number().int().min(1).max(20).optional(),
  threshold: z.coerce.number().min(0).optional(),
  limit: z.coerce.number().int().min(1).optional(),
  "target-recall": Rate.default(0.95),
  out: z.string().optional(),
  "timeout-minutes": z.coerce.number().positive().default(240),
  "fake-oracle": z
    .string()
    .transform((text) => text.split(",").map((part) => Number(part.trim())))
    .pipe(z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]))
    .optional(),
  seed: z.coerce.number().int().default(1),
});

const Env = z.object({
  BASE_URL: z.url().default("http://localhost:8000"),
  API_KEY: z.string().min(1).optional(),
  LLM_API_KEY: z.string().min(1).optional(),
});

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== "screening") {
    console.error(USAGE);
    return command === undefined || command === "--help" ? 0 : 2;
  }
  const { values } = parseArgs({
    args: rest,
    strict: true,
    options: {
      ...Object.fromEntries(
        ["dataset", "criteria", "model", "repetitions", "threshold", "limit", "target-recall", "out", "timeout-minutes", "fake-oracle", "seed"].map((name) => [name, { type: "string" as const }]),
      ),
      file: { type: "string", multiple: true },
      included: { type: "string", multiple: true },
      "merge-duplicates": { type: "boolean" },
    },
  });
  const parsed = Options.safeParse(values);
  if (!parsed.success) {
    console.error(`${z.prettifyError(parsed.error)}\n\n${USAGE}`);
    return 2;
  }
  const options = parsed.data;
  if (!options.dataset === !options.file) {
    console.error(`give exactly one of --dataset and --file\n\n${USAGE}`);
    return 2;
  }
  if (options.dataset && (options.included || options["merge-duplicates"])) {
    console.error(`--included and --merge-duplicates go with --file\n\n${USAGE}`);
    return 2;
  }
  const review = loadReview(options);
  if (review.import) {
    const summary = review.import;
    console.error(
      `${review.records.length} records from ${summary.files.map((f) => `${f.name} (${f.format}, ${f.records})`).join(", ")}; ` +
        `${summary.duplicates} duplicates in ${summary.duplicate_groups} groups${summary.merged ? ", merged" : " (kept: --merge-duplicates screens one of each)"}`,
    );
    const from = summary.included_from;
    if (from) console.error(`labels: ${from.matched} of ${from.studies} included studies matched a record${from.unmatched.length ? `; not found: ${from.unmatched.slice(0, 20).join(", ")}` : ""}`);
  }

  let fake: FakeStack | undefined;
  let api: { baseUrl: string; apiKey: string; providerKey?: string | undefined };
  const oracle = options["fake-oracle"] ? { sensitivity: options["fake-oracle"][0], specificity: options["fake-oracle"][1], seed: options.seed } : null;
  if (oracle) {
    // The same bound as npm start's (STACK_START_TIMEOUT_S): a busy machine takes minutes to start a stack.
    const startTimeoutMs = startTimeoutFromEnv(process.env);
    if (typeof startTimeoutMs === "string") {
      console.error(startTimeoutMs);
      return 2;
    }
    // A Ctrl-C during the start gives it up at once (what had started is stopped), rather than after it.
    const abandon = new AbortController();
    const starting = startFakeStack(review.records, oracle, { startTimeoutMs, signal: abandon.signal });
    stopOnSignal(starting, abandon);
    // Said once the signals are handled: a Ctrl-C after this line stops what the start began (CI once
    // saw eval killed outright by a SIGINT sent just after the line, before its handler was there).
    console.error(`starting a local stack with the fake provider in oracle mode (sensitivity ${oracle.sensitivity}, specificity ${oracle.specificity})…`);
    fake = await starting;
    api = { baseUrl: fake.baseUrl, apiKey: fake.apiKey };
  } else {
    const env = Env.parse(process.env);
    if (!env.API_KEY) {
      console.error("API_KEY is not set: the service key of the gateway at BASE_URL (npm start keeps a generated one in .data/api-key)");
      return 2;
    }
    api = { baseUrl: env.BASE_URL, apiKey: env.API_KEY, providerKey: env.LLM_API_KEY };
  }

  let report: ScreeningReport;
  try {
    report = await evaluateScreening({
      api,
      review,
      model: options.model,
      repetitions: options.repetitions,
      threshold: options.threshold,
      limit: options.limit,
      targetRecall: options["target-recall"],
      timeoutMs: options["timeout-minutes"] * 60_000,
      oracle,
      log: (line) => console.error(line),
    });
    if (fake && fake.oracle.stats().unknownPapers > 0) {
      throw new Error(`the oracle did not recognise ${fake.oracle.stats().unknownPapers} papers in labelling prompts`);
    }
  } finally {
    await fake?.stop();
  }

  const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
  const dir = resolve(options.out ?? resolve(ROOT, ".data/eval", `${review.name}-${stamp}`));
  const paths = writeReport(dir, report);
  const at = report.at_job_threshold;
  const target = report.target.threshold;
  const p = (v: number | null) => (v === null ? "–" : `${(v * 100).toFixed(1)}%`);
  console.log(`${review.name}: ${report.dataset.records} papers, ${report.dataset.included} included, ${report.service.repetitions} votes, model ${report.service.model}`);
  console.log(`at ≥${report.service.threshold}: recall ${p(at.recall)}, specificity ${p(at.specificity)}, precision ${p(at.precision)}, F1 ${at.f1?.toFixed(3) ?? "–"}, WSS@95 ${p(report.wss_at_95)}`);
  console.log(
    target
      ? `target recall ${p(report.target.recall)}: ≥${target.votes} votes, recall ${p(target.recall)}, work saved ${p(target.work_saved)}, ${report.target.missed_included.length} included studies missed`
      : "no threshold reaches the target recall",
  );
  console.log(`wall time ${report.wall_seconds.toFixed(1)} s`);
  console.log(`report: ${paths.markdown}\n        ${paths.json}\n        ${paths.svg}`);
  return 0;
}

/**
 * Ctrl-C or a SIGTERM (a CI timeout) while the local stack runs, or while it starts: the stack is
 * stopped (a start under way is given up, what it had started stopped) before the process exits, so no gateway,
 * worker or nats-server outlives the run.
 */
/** Set on Ctrl-C or SIGTERM: the stop it began ends the process (with 128 + the signal), not main's outcome. */
let stoppingOn: NodeJS.Signals | null = null;

function stopOnSignal(stack: Promise<FakeStack>, abandon: AbortController): void {
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppingOn) return;
    stoppingOn = signal;
    console.error(`${signal}: stopping the local stack…`);
    abandon.abort(new Error(`${signal} during the start`));
    void stack
      .then((started) => started.stop(), () => undefined)
      .finally(() => process.exit(128 + constants.signals[signal]));
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);
}

function loadReview(options: z.infer<typeof Options>): LabelledReview {
  if (options.dataset) {
    const review = loadBuiltIn(options.dataset);
    return options.criteria ? { ...review, criteria: loadCriteriaFile(options.criteria) } : review;
  }
  if (!options.criteria) throw new Error("--file needs --criteria FILE: the review's eligibility criteria");
  const paths = options.file!.map((file) => resolve(file));
  const name = paths[0]!.replace(/^.*\//, "").replace(/(\.[A-Za-z0-9]{1,8})*$/, "");
  const criteria = loadCriteriaFile(options.criteria);
  const jsonLines = paths.filter(isJsonLines);
  if (jsonLines.length > 0) {
    if (paths.length > 1 || options.included || options["merge-duplicates"]) throw new Error(`${jsonLines[0]} is JSON Lines, which carries its own labels: give it alone, without --included or --merge-duplicates`);
    return { name, source: paths[0]!, records: loadRecords(paths[0]!), criteria, import: null };
  }
  const { records, summary } = loadReferenceFiles(paths, { included: options.included?.map((file) => resolve(file)), mergeDuplicates: options["merge-duplicates"] });
  return { name, source: paths.join(", "), records, criteria, import: summary };
}

main(process.argv.slice(2)).then(
  (code) => stoppingOn ?? process.exit(code),
  (error: unknown) => {
    if (stoppingOn) return;
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
