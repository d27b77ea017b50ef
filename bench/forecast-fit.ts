/**
 * Fits the screening forecast's constants (`services/screening/src/estimate.ts`, `PER_PAPER`) on
 * data other than the screening bench's own: the three SYNERGY reviews in data/synergy (the
 * screening bench uses nagtegaal_2019). The real pipeline runs in this process (live model,
 * libs/llm client, default batch sizes, 4 criteria, 5 repetitions) against the fake provider with
 * the screening bench's responder, once where `n` is honoured and once where it is ignored (the run
 * probes, then spreads the votes), and the provider's usage is summed per stage.
 *
 *   npm run bench -- forecast-fit [--label-batch N]
 *
 * Printed per paper: each stage's tokens, and the labelling input less the paper's own text
 * (title and abstract at 4 characters a token), which is what the forecast adds to the spec's
 * ~440-token paper. Then the check, on the bench's own data (300 nagtegaal_2019 papers): the
 * forecast of a fresh client after the probe the estimate route sends, against the first job's
 * bill, `n` honoured and ignored, prompt caching on and off. No NATS, no stack: under a minute.
 */
import { builtInNames, loadBuiltIn } from "../eval/datasets";
import { defaultServiceConfig, type ScreeningJobInput, type ScreeningPaper } from "../libs/contracts/src/index";
import type { JobContext, JobOutcome } from "../libs/jobs/src/index";
import { LlmClient } from "../libs/llm/src/index";
import { PROVIDER_PROFILES, profileModelPrices, startFakeProvider } from "../libs/llm/src/testing/index";
import { createLogger } from "../libs/telemetry/src/index";
import { createLiveModel } from "../services/screening/src/model/live-model";
import { runScreeningPipeline, type PipelineSettings } from "../services/screening/src/pipeline/run";
import { estimateScreening } from "../services/screening/src/estimate";
import { ScreeningEnv } from "../services/screening/src/env";
import { CRITERIA, screeningPapers, screeningResponder } from "../test/e2e/screening-fixtures";

const REPETITIONS = 5;
const MODEL = "llm-5-nano";
/** The screening service's defaults (services/screening/src/env.ts); `--label-batch N` measures another labelling batch size. */
const labelBatchArg = process.argv.indexOf("--label-batch");
const SETTINGS: PipelineSettings = {
  labelBatch: labelBatchArg >= 0 ? Number(process.argv[labelBatchArg + 1]) : ScreeningEnv.shape.SCREENING_LABEL_BATCH.parse(undefined),
  reasonBatch: ScreeningEnv.shape.SCREENING_REASON_BATCH.parse(undefined),
  clusterChunk: 120,
  assignBatch: 40,
  maxClusters: 8,
  callConcurrency: 32,
};
if (!Number.isInteger(SETTINGS.labelBatch) || SETTINGS.labelBatch < 1) throw new Error("--label-batch must be a positive integer");
const REASONING_ABSTRACT_CHARS = 800;
const logger = createLogger("forecast-fit", "silent");

const papers: ScreeningPaper[] = builtInNames().flatMap((name) =>
  loadBuiltIn(name).records.map((r, i) => ({ id: `${name}-${i}`, title: r.title, abstract: r.abstract ?? "" })),
);
const textTokens = papers.reduce((sum, p) => sum + (p.title.length + p.abstract.length) / 4, 0) / papers.length;
console.log(`${papers.length} papers of ${builtInNames().join(", ")}; title and abstract ${textTokens.toFixed(0)} tokens a paper on average`);
console.log(`${CRITERIA.length} criteria, ${REPETITIONS} repetitions, labelling batch ${SETTINGS.labelBatch}, reasoning batch ${SETTINGS.reasonBatch}`);

type Profile = "openai" | "ollama";
type StageUsage = { calls: number; input_tokens: number; output_tokens: number; cached_input_tokens: number; cost_usd: number };

/** One job through the real pipeline against a fresh fake provider and client (a fresh stack): the usage by stage, and what the client found of `n`. */
async function runJob(jobPapers: ScreeningPaper[], profile: Profile, cache: boolean, beforeRun?: (llm: LlmClient) => Promise<void>) {
  const provider = await startFakeProvider({ respond: screeningResponder(), promptCache: cache, ...(profile === "openai" ? {} : { profile }) });
  try {
    const llm = new LlmClient({
      apiKey: "sk-forecast-fit",
      baseURL: provider.baseUrl(profile === "openai" ? undefined : profile),
      modelAliases: { ...PROVIDER_PROFILES[profile].aliases },
      concurrency: SETTINGS.callConcurrency,
      baseDelayMs: 5,
    });
    await beforeRun?.(llm);
    const input: ScreeningJobInput = { papers: jobPapers, criteria: CRITERIA as ScreeningJobInput["criteria"], questions: [] };
    const outcome: JobOutcome = await runScreeningPipeline(
      jobContext(input, { model: MODEL, repetitions: REPETITIONS, threshold: 1, clusters_type: null, mock: false }),
      (frame) => createLiveModel({ llm, frame, providerKey: undefined, signal: new AbortController().signal, config: defaultServiceConfig("screening"), reasoningAbstractChars: REASONING_ABSTRACT_CHARS }),
      SETTINGS,
    );
    return { byStage: outcome.extra?.usage_by_stage as Record<string, StageUsage>, ignoresN: llm.ignoresN };
  } finally {
    await provider.close();
  }
}

const label = (profile: Profile, cache: boolean) => `${profile === "openai" ? "n honoured" : "n ignored (votes spread)"}, cache ${cache ? "on" : "off"}`;

console.log("\nfit (SYNERGY):");
for (const profile of ["openai", "ollama"] as const) {
  const { byStage, ignoresN } = await runJob(papers, profile, true);
  const per = (n: number) => n / papers.length;
  const passes = ignoresN ? REPETITIONS : 1;
  const labelling = byStage.labelling!;
  const reasoning = byStage.reasoning!;
  const rest = ["clustering", "assignment"].map((s) => byStage[s]!).reduce((a, b) => ({ ...a, input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens }));
  console.log(`── ${label(profile, true)}: ${Object.values(byStage).reduce((s, u) => s + u.calls, 0)} calls`);
  console.log(`labelling   input ${per(labelling.input_tokens / passes).toFixed(1)} a paper a pass (${passes} pass${passes > 1 ? "es" : ""}), of which overhead ${(per(labelling.input_tokens / passes) - textTokens).toFixed(1)}; output ${per(labelling.output_tokens / REPETITIONS).toFixed(2)} a vote; cached ${per(labelling.cached_input_tokens).toFixed(1)}`);
  console.log(`reasoning   input ${per(reasoning.input_tokens).toFixed(1)}, output ${per(reasoning.output_tokens).toFixed(2)} a paper`);
  console.log(`clustering and assignment  input ${per(rest.input_tokens).toFixed(1)}, output ${per(rest.output_tokens).toFixed(2)} a paper`);
}

// The check, on the screening bench's data: the forecast a fresh client gives (after the probe the
// estimate route sends) against the bill of the first job, in the four provider profiles.
const CHECK_PAPERS = 300;
const check = screeningPapers(CHECK_PAPERS);
process.env.MODEL_PRICES ??= profileModelPrices(); // the other servers' models, priced like gpt-5-nano
console.log(`\ncheck (${CHECK_PAPERS} papers of nagtegaal_2019, the screening bench's data): actual / forecast, ±15%`);
for (const profile of ["openai", "ollama"] as const) {
  for (const cache of [true, false]) {
    let forecast: ReturnType<typeof estimateScreening> | undefined;
    const { byStage } = await runJob(check, profile, cache, async (llm) => {
      await llm.probeN({ model: MODEL });
      forecast = estimateScreening({ papers_count: CHECK_PAPERS, repetitions: REPETITIONS, criteria_count: CRITERIA.length, model: MODEL }, llm.modelAliases, { ignoresN: llm.ignoresN });
    });
    const total = Object.values(byStage).reduce((a, b) => ({ ...a, input_tokens: a.input_tokens + b.input_tokens, cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens, output_tokens: a.output_tokens + b.output_tokens, cost_usd: a.cost_usd + b.cost_usd }));
    const ratio = total.cost_usd / forecast!.forecast_cost_usd!;
    console.log(
      `${label(profile, cache).padEnd(36)} forecast $${forecast!.forecast_cost_usd!.toFixed(6)} (n ${forecast!.forecast_provider_n}), actual $${total.cost_usd.toFixed(6)}: ${ratio.toFixed(3)} ${Math.abs(ratio - 1) <= 0.15 ? "within" : "OUTSIDE"}; ` +
        `input ${(total.input_tokens / forecast!.forecast_input_tokens!).toFixed(3)}, output ${(total.output_tokens / forecast!.forecast_output_tokens!).toFixed(3)}, cached ${((100 * total.cached_input_tokens) / total.input_tokens).toFixed(1)}% of input`,
    );
  }
}

/** A job context holding the input and checkpoints in memory (one run, no redelivery). */
function jobContext(input: ScreeningJobInput, params: Record<string, unknown>): JobContext {
  const saved = new Map<string, Map<string, unknown>>();
  return {
    jobId: "forecast-fit",
    state: {} as JobContext["state"],
    params,
    attempt: 1,
    signal: new AbortController().signal,
    providerKey: undefined,
    logger,
    input: async <T>() => input as T,
    inputHead: async <T>() => ({ head: { criteria: input.criteria, questions: input.questions } as T, count: input.papers.length }),
    inputItems: <T>() =>
      (async function* () {
        for (let start = 0; start < input.papers.length; start += 500) yield input.papers.slice(start, start + 500) as T[];
      })(),
    report: async () => undefined,
    leaseHeld: async () => undefined,
    checkpoints: {
      load: async <T>(stage: string) => new Map(saved.get(stage) ?? []) as Map<string, T>,
      save: async (stage, unit, data) => {
        if (!saved.has(stage)) saved.set(stage, new Map());
        saved.get(stage)!.set(unit, data);
      },
    },
    partials: { append: async () => undefined },
  };
}
