import { z } from "zod";
import type { ScreeningPaper, ServiceConfigResponse } from "@litrev/contracts";
import type { LlmClient, LlmUsage, ReasoningEffort } from "@litrev/llm";
import { PROMPTS, type StageName } from "../prompts";
import { addStageUsage, VERDICTS, ZERO_STAGE_USAGE, type JobFrame, type LabelVote, type ModelCall, type ReasoningInput, type ScreeningModel, type StageUsage, type Theme } from "../pipeline/types";

export interface LiveModelOptions {
  llm: LlmClient;
  frame: JobFrame;
  /** The client's key for this job; undefined → the server's configured key. */
  providerKey: string | undefined;
  signal: AbortSignal;
  config: ServiceConfigResponse;
  /** Abstract characters the reasoning stage sends (the verdicts carry most of what it needs). */
  reasoningAbstractChars: number;
}

const ThemeSchema = z.object({ label: z.string(), description: z.string() });

/**
 * The four stages against a provider through libs/llm: strict JSON-schema replies validated before
 * use; the fixed part of every prompt (preamble, stage instructions, criteria, questions, clusters)
 * in the system message and the papers last, so the provider can cache the prefix; the R votes of a
 * labelling call sampled with `n` in one request when the provider supports it (the abstract is
 * sent and billed once), else one request per vote.
 */
export function createLiveModel(options: LiveModelOptions): ScreeningModel {
  const { llm, frame, config } = options;
  const criteriaBlock = describeCriteria(frame);
  let samplesSupported = true;

  const call = async <S extends z.ZodType>(
    stage: StageName,
    schemaName: string,
    schema: S,
    user: string,
    effort: ReasoningEffort,
    extraSystem = "",
    n = 1,
  ) => {
    const system = PROMPTS.system(stage, config, criteriaBlock, extraSystem);
    return llm.structured({
      model: frame.model,
      schema,
      schemaName,
      system,
      user,
      temperature: config.temperature,
      maxOutputTokens: config.max_output_tokens,
      reasoningEffort: effort,
      n,
      providerKey: options.providerKey,
      signal: options.signal,
    });
  };

  return {
    async label(papers: ScreeningPaper[], repetitions: number): Promise<ModelCall<LabelVote[][]>> {
      const c = frame.criteria.length;
      const decision = z.object({ criteria: z.array(z.enum(VERDICTS)).length(c), include: z.boolean() });
      const schema = z.object({ decisions: z.array(decision).length(papers.length) });
      const user = papers.map((paper, i) => `[${i + 1}] ${describePaper(paper)}`).join("\n\n");
      const votes: LabelVote[][] = papers.map(() => []);
      let usage = ZERO_STAGE_USAGE;
      for (let round = 0; votes[0]!.length < repetitions; round++) {
        if (round > repetitions * 2) throw new Error("the provider kept returning too few valid choices");
        const wanted = repetitions - votes[0]!.length;
        const n = samplesSupported ? wanted : 1;
        const result = await call("labelling", `screening_labels_${papers.length}x${c}`, schema, user, "minimal", "", n);
        usage = addStageUsage(usage, stageUsage(result.usage));
        // A provider that ignores `n` answers with one choice: ask one vote per request from now on.
        if (n > 1 && result.choices.length === 1) samplesSupported = false;
        for (const choice of result.choices.slice(0, wanted)) {
          choice.decisions.forEach((d, i) => votes[i]!.push({ include: d.include, verdicts: d.criteria }));
        }
      }
      return { value: votes, usage };
    },

    keepForReasoning(paper: ScreeningPaper): ScreeningPaper {
      return { id: paper.id, title: paper.title, abstract: excerpt(paper.abstract, options.reasoningAbstractChars) };
    },

    async reason(items: ReasoningInput[]): Promise<ModelCall<string[]>> {
      const schema = z.object({ reasons: z.array(z.string()).length(items.length) });
      const user = items
        .map((item, i) => {
          const verdicts = item.verdicts.map((v, c) => `${c + 1} ${v}`).join("; ");
          const abstract = excerpt(item.paper.abstract, options.reasoningAbstractChars);
          return [
            `[${i + 1}] Title: ${item.paper.title || "(no title)"}`,
            abstract ? `Abstract (excerpt): ${abstract}` : "",
            `Decision: ${item.decision} (${item.includeVotes} of ${item.repetitions} votes to include)`,
            verdicts ? `Criteria verdicts: ${verdicts}` : "",
          ]
            .filter(Boolean)
            .join("\n");
        })
        .join("\n\n");
      const result = await call("reasoning", `screening_reasons_${items.length}`, schema, user, "minimal");
      return { value: result.data.reasons.map((r) => r.trim()), usage: stageUsage(result.usage) };
    },

    async themes(reasons: string[], maxThemes: number): Promise<ModelCall<Theme[]>> {
      const schema = z.object({ themes: z.array(ThemeSchema).min(1).max(maxThemes) });
      const user = `Screening reasons:\n${reasons.map((r) => `- ${r}`).join("\n")}\n\nPropose at most ${maxThemes} themes.`;
      const result = await call("clustering", `screening_themes_${maxThemes}`, schema, user, "low");
      return { value: result.data.themes, usage: stageUsage(result.usage) };
    },

    async merge(themes: Theme[], maxClusters: number): Promise<ModelCall<Theme[]>> {
      const schema = z.object({ clusters: z.array(ThemeSchema).min(1).max(maxClusters) });
      const user =
        `Themes found in different parts of the screening reasons:\n${themes.map((t) => `- ${t.label}: ${t.description}`).join("\n")}\n\n` +
        `Merge overlapping themes into at most ${maxClusters} clusters that together cover all of them.`;
      const result = await call("clustering", `screening_clusters_${maxClusters}`, schema, user, "low");
      return { value: result.data.clusters, usage: stageUsage(result.usage) };
    },

    async assign(reasons: string[], clusters: Theme[]): Promise<ModelCall<number[]>> {
      const schema = z.object({ assignments: z.array(z.number().int().min(1).max(clusters.length)).length(reasons.length) });
      const list = `Clusters:\n${clusters.map((t, i) => `${i + 1}. ${t.label}: ${t.description}`).join("\n")}`;
      const user = `Screening reasons:\n${reasons.map((r, i) => `[${i + 1}] ${r}`).join("\n")}`;
      const result = await call("assignment", `screening_assign_${reasons.length}x${clusters.length}`, schema, user, "minimal", list);
      // Numbered from 1 in the prompt (people and models count from 1), from 0 in the pipeline.
      return { value: result.data.assignments.map((a) => a - 1), usage: stageUsage(result.usage) };
    },
  };
}

function describeCriteria(frame: JobFrame): string {
  const criteria = frame.criteria.length
    ? `Criteria:\n${frame.criteria.map((c, i) => `${i + 1}. [${c.type}]${c.name ? ` ${c.name}:` : ""} ${c.value}`).join("\n")}`
    : "Criteria: none were given; judge relevance to the research questions.";
  const questions = frame.questions.length ? `Research questions:\n${frame.questions.map((q) => `- ${q}`).join("\n")}` : "";
  return [criteria, questions].filter(Boolean).join("\n\n");
}

function describePaper(paper: ScreeningPaper): string {
  return `Title: ${paper.title || "(no title)"}\nAbstract: ${paper.abstract || "(no abstract)"}`;
}

/** At most `max` characters, cut at a word where one is near, "…" included (so an excerpt is its own excerpt). */
function excerpt(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 1) return text.slice(0, max);
  const cut = text.slice(0, max - 1);
  const end = cut.lastIndexOf(" ");
  return `${cut.slice(0, end > max * 0.6 ? end : max - 1)}…`;
}

function stageUsage(usage: LlmUsage): StageUsage {
  return {
    calls: 1,
    input_tokens: usage.inputTokens,
    cached_input_tokens: usage.cachedInputTokens,
    output_tokens: usage.outputTokens,
    cost_usd: usage.costUsd,
  };
}
