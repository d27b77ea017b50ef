/**
 * Fits the screening forecast's constants (`services/screening/src/estimate.ts`, `PER_PAPER`) on
 * data other than the screening bench's own: the three SYNERGY reviews in data/synergy (the
 * screening bench uses nagtegaal_2019). The real pipeline runs in this process (live model,
 * libs/llm client, default batch sizes, 4 criteria, 5 repetitions) against the fake provider with
 * the screening bench's responder, once where `n` is honoured and once where it is ignored (the run
 * probes, then spreads the votes), and the provider's usage is summed per stage.
 *
 *   npm run bench -- forecast-fit
 *
 * Printed per paper: each stage's tokens, and the labelling input less the paper's own text
 * (title and abstract at 4 characters a token), which is what the forecast adds to the spec's
 * ~440-token paper. No NATS, no stack: a few seconds.
 */
import { builtInNames, loadBuiltIn } from "../eval/datasets";
import { defaultServiceConfig, type ScreeningJobInput, type ScreeningPaper } from "../libs/contracts/src/index";
import type { JobContext, JobOutcome } from "../libs/jobs/src/index";
import { LlmClient } from "../libs/llm/src/index";
import { PROVIDER_PROFILES, startFakeProvider } from "../libs/llm/src/testing/index";
import { createLogger } from "../libs/telemetry/src/index";
import { createLiveModel } from "../services/screening/src/model/live-model";
import { runScreeningPipeline, type PipelineSettings } from "../services/screening/src/pipeline/run";
import { CRITERIA, screeningResponder } from "../test/e2e/screening-fixtures";

const REPETITIONS = 5;
/** The screening service's defaults (services/screening/src/env.ts). */
const SETTINGS: PipelineSettings = { labelBatch: 5, reasonBatch: 5, clusterChunk: 120, assignBatch: 40, maxClusters: 8, callConcurrency: 32 };
const REASONING_ABSTRACT_CHARS = 800;
const logger = createLogger("forecast-fit", "silent");

const papers: ScreeningPaper[] = builtInNames().flatMap((name) =>
  loadBuiltIn(name).records.map((r, i) => ({ id: `${name}-${i}`, title: r.title, abstract: r.abstract ?? "" })),
);
const textTokens = papers.reduce((sum, p) => sum + (p.title.length + p.abstract.length) / 4, 0) / papers.length;
console.log(`${papers.length} papers of ${builtInNames().join(", ")}; title and abstract ${textTokens.toFixed(0)} tokens a paper on average`);
console.log(`${CRITERIA.length} criteria, ${REPETITIONS} repetitions, labelling batch ${SETTINGS.labelBatch}, reasoning batch ${SETTINGS.reasonBatch}`);

for (const profile of ["openai", "ollama"] as const) {
  const provider = await startFakeProvider({ respond: screeningResponder(), ...(profile === "openai" ? {} : { profile }) });
  try {
    const llm = new LlmClient({
      apiKey: "sk-forecast-fit",
      baseURL: provider.baseUrl(profile === "openai" ? undefined : profile),
      modelAliases: { ...PROVIDER_PROFILES[profile].aliases },
      concurrency: SETTINGS.callConcurrency,
      baseDelayMs: 5,
    });
    const input: ScreeningJobInput = { papers, criteria: CRITERIA as ScreeningJobInput["criteria"], questions: [] };
    const frameModel = "llm-5-nano";
    const outcome: JobOutcome = await runScreeningPipeline(
      jobContext(input, { model: frameModel, repetitions: REPETITIONS, threshold: 1, clusters_type: null, mock: false }),
      (frame) => createLiveModel({ llm, frame, providerKey: undefined, signal: new AbortController().signal, config: defaultServiceConfig("screening"), reasoningAbstractChars: REASONING_ABSTRACT_CHARS }),
      SETTINGS,
    );
    const byStage = outcome.extra?.usage_by_stage as Record<string, { calls: number; input_tokens: number; output_tokens: number; cached_input_tokens: number }>;
    const per = (n: number) => n / papers.length;
    const passes = llm.ignoresN ? REPETITIONS : 1;
    const labelling = byStage.labelling!;
    const reasoning = byStage.reasoning!;
    const rest = ["clustering", "assignment"].map((s) => byStage[s]!).reduce((a, b) => ({ ...a, input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens, calls: a.calls + b.calls }));
    console.log(`\n── ${profile === "openai" ? "n honoured" : "n ignored (found by the probe; votes spread)"}: ${Object.values(byStage).reduce((s, u) => s + u.calls, 0)} calls`);
    console.log(`labelling   input ${per(labelling.input_tokens / passes).toFixed(1)} a paper a pass (${passes} pass${passes > 1 ? "es" : ""}), of which overhead ${(per(labelling.input_tokens / passes) - textTokens).toFixed(1)}; output ${per(labelling.output_tokens / REPETITIONS).toFixed(2)} a vote; cached ${per(labelling.cached_input_tokens).toFixed(1)}`);
    console.log(`reasoning   input ${per(reasoning.input_tokens).toFixed(1)}, output ${per(reasoning.output_tokens).toFixed(2)} a paper`);
    console.log(`clustering and assignment  input ${per(rest.input_tokens).toFixed(1)}, output ${per(rest.output_tokens).toFixed(2)} a paper`);
  } finally {
    await provider.close();
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
