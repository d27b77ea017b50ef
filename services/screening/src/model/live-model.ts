import { z } from "zod";
import { dataBlock, matchById, neutraliseMarkers, type ScreeningPaper, type ServiceConfigResponse } from "@litrev/contracts";
import type { PromptUse, StageParameters } from "@litrev/contracts";
import { addUsage, sentParameters, ZERO_USAGE, type LlmClient, type ReasoningEffort } from "@litrev/llm";
import { forEachLimited } from "@litrev/jobs/worker";
import { promptUse } from "@litrev/prompts";
import { PROMPTS, type StageName } from "../prompts";
import { VERDICTS, type JobFrame, type LabelVote, type ModelCall, type ReasoningInput, type ScreeningModel, type Theme, type VoteSpread } from "../pipeline/types";
import { voteGroups } from "../pipeline/vote-groups";

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

/** The reasoning effort each stage asks for (reasoning models only). */
const STAGE_EFFORT: Record<StageName, ReasoningEffort> = { labelling: "minimal", reasoning: "minimal", clustering: "low", assignment: "minimal" };

/** Calls in a row, asking about one still-unanswered paper alone, that may bring no vote before it is given up. */
const SOLO_ATTEMPTS = 2;

/**
 * The fixed system text of each stage as this job sends it (preamble, data rule, instructions,
 * criteria and questions; no paper data), hashed for the job's provenance. The assignment stage
 * appends the job's cluster list to it, which is model output and not part of the prompt.
 */
export function stagePrompts(config: ServiceConfigResponse, frame: Pick<JobFrame, "criteria" | "questions">): PromptUse[] {
  const criteria = describeCriteria(frame);
  return (Object.keys(PROMPTS.prompts) as StageName[]).map((stage) =>
    promptUse(PROMPTS.prompts[stage].name, config.prompt_template_id, PROMPTS.system(stage, config, criteria)),
  );
}

/** What each stage sends the model as sampling settings (after the model family's rules). */
export function stageParameters(config: ServiceConfigResponse, model: string): Record<string, StageParameters> {
  return Object.fromEntries(
    (Object.keys(STAGE_EFFORT) as StageName[]).map((stage) => [
      stage,
      sentParameters(model, { temperature: config.temperature, maxOutputTokens: config.max_output_tokens, reasoningEffort: STAGE_EFFORT[stage] }),
    ]),
  );
}

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
  // One schema per reply shape for the job: its name says the shape (stage and sizes), and libs/llm
  // prepares a schema's response format and decoder once per schema object (a new one each call
  // cost the fast-provider bench 7% of the worker's CPU, converting and compiling it again).
  const schemas = new Map<string, z.ZodType>();
  const schemaFor = <S extends z.ZodType>(name: string, build: () => S): S => {
    let schema = schemas.get(name) as S | undefined;
    if (!schema) schemas.set(name, (schema = build()));
    return schema;
  };

  const call = async <S extends z.ZodType>(
    stage: StageName,
    schemaName: string,
    schema: S,
    user: string,
    extraSystem = "",
    n = 1,
  ) => {
    const system = PROMPTS.system(stage, config, criteriaBlock, extraSystem);
    return llm.structured({
      model: frame.model,
      resolvedModel: frame.resolvedModel,
      schema,
      schemaName,
      system,
      user,
      temperature: config.temperature,
      maxOutputTokens: config.max_output_tokens,
      reasoningEffort: STAGE_EFFORT[stage],
      n,
      providerKey: options.providerKey,
      background: true, // a job: the provider's rate limit slows it down, never fails it
      signal: options.signal,
    });
  };

  return {
    async providerIgnoresN(): Promise<ModelCall<boolean>> {
      const usage = await llm.probeN({ model: frame.model, resolvedModel: frame.resolvedModel, providerKey: options.providerKey, signal: options.signal });
      return { value: llm.ignoresNFor(options.providerKey), usage };
    },

    async label(papers: ScreeningPaper[], repetitions: number, spread?: VoteSpread): Promise<ModelCall<LabelVote[][]>> {
      const c = frame.criteria.length;
      const decision = () => z.object({ id: z.string(), criteria: z.array(z.enum(VERDICTS)).length(c), include: z.boolean() });
      // Batch-local ids (p1…pN), never the client's ids: those are free text a client chose.
      const ids = papers.map((_, i) => `p${i + 1}`);
      const votes: LabelVote[][] = papers.map(() => []);
      let usage = ZERO_USAGE;
      const seen = { invented: 0, missing: 0, examples: [] as string[], replies: 0 };
      const shortOf = (among: number[]) => among.filter((i) => votes[i]!.length < repetitions);
      // One request for the papers in `among` still short of votes; false when it brought no new vote.
      const ask = async (among: number[], single = false): Promise<boolean> => {
        const short = shortOf(among);
        if (short.length === 0) return false;
        const wanted = Math.max(...short.map((i) => repetitions - votes[i]!.length));
        const n = samplesSupported && !single ? wanted : 1;
        const name = `screening_labels_${short.length}x${c}`;
        const schema = schemaFor(name, () => z.object({ decisions: z.array(decision()).length(short.length) }));
        const user = labellingMessage(short.map((i) => ({ id: ids[i]!, paper: papers[i]! })));
        const send = () => call("labelling", name, schema, user, "", n);
        const result = await (spread ? spread.gate(send) : send());
        usage = addUsage(usage, result.usage);
        // A provider that ignores `n` answers with one choice: ask one vote per request from now on.
        if (n > 1 && result.choices.length === 1) samplesSupported = false;
        let gained = false;
        for (const choice of result.choices) {
          seen.replies++;
          const asked = short.map((i) => ids[i]!);
          const matched = matchById(asked, choice.decisions);
          seen.invented += matched.invented;
          seen.missing += matched.missing.length;
          if (seen.examples.length < 3) {
            const known = new Set(asked);
            for (const d of choice.decisions) if (!known.has(d.id.trim()) && seen.examples.length < 3) seen.examples.push(JSON.stringify(d.id.slice(0, 40)));
          }
          for (const i of short) {
            const d = matched.byId.get(ids[i]!);
            if (d && votes[i]!.length < repetitions) {
              votes[i]!.push({ include: d.include, verdicts: d.criteria });
              gained = true;
            }
          }
        }
        return gained;
      };
      const all = papers.map((_, i) => i);
      // Votes as separate requests, each vote's calls with other batch-mates (a pooled unit). The
      // calls of every vote go through the job's window: no vote waits for the slowest call of the one before.
      if (spread) {
        const groups = Array.from({ length: repetitions }, (_, vote) => voteGroups(papers.length, spread.callSize, spread.pool, vote)).flat();
        await forEachLimited(groups, spread.pool, options.signal, async (group) => {
          await ask(group, true);
        });
      }
      // The papers still short, at most a call's worth at a time.
      const callSize = spread?.callSize ?? papers.length;
      const askShort = async (): Promise<boolean> => {
        const short = shortOf(all);
        let gained = false;
        for (let start = 0; start < short.length; start += callSize) gained = (await ask(short.slice(start, start + callSize))) || gained;
        return gained;
      };
      // Replies are matched to papers by id; ids the model invented are ignored. Papers a reply left
      // out are asked about again together while that still brings votes in...
      for (let round = 0; shortOf(all).length > 0 && round <= repetitions * 2 + 2; round++) {
        if (!(await askShort())) break;
      }
      // ...then each paper still short is asked about alone: a weaker model that mangles a batch's
      // ids often answers a single paper correctly.
      // Asked again while it brings votes in (a provider that ignores `n` gives one per call), until
      // SOLO_ATTEMPTS calls brought none: at most repetitions + SOLO_ATTEMPTS calls per paper.
      for (const i of shortOf(all)) {
        for (let barren = 0, calls = 0; barren < SOLO_ATTEMPTS && votes[i]!.length < repetitions && calls < repetitions + SOLO_ATTEMPTS; calls++) {
          barren = (await ask([i])) ? 0 : barren + 1;
        }
      }
      // Whatever is still short goes back with fewer votes: the pipeline sends such papers to a human.
      const lost = shortOf(all).length;
      const trouble =
        lost === 0
          ? undefined
          : `in ${seen.replies} replies it left out ${seen.missing} requested paper ids` +
            (seen.invented > 0 ? ` and named ${seen.invented} ids that were not asked about (e.g. ${seen.examples.join(", ")})` : "");
      return { value: votes, usage, trouble };
    },

    keepForReasoning(paper: ScreeningPaper): ScreeningPaper {
      return { id: paper.id, title: paper.title, abstract: excerpt(paper.abstract, options.reasoningAbstractChars) };
    },

    async reason(items: ReasoningInput[]): Promise<ModelCall<string[]>> {
      const ids = items.map((_, i) => `p${i + 1}`);
      const reasons: (string | undefined)[] = items.map(() => undefined);
      let usage = ZERO_USAGE;
      // Matched by id; a paper left out is asked about once more, then marked as unexplained.
      for (let round = 0; round < 2; round++) {
        const open = items.flatMap((_, i) => (reasons[i] === undefined ? [i] : []));
        if (open.length === 0) break;
        const name = `screening_reasons_${open.length}`;
        const schema = schemaFor(name, () => z.object({ reasons: z.array(z.object({ id: z.string(), reason: z.string() })).length(open.length) }));
        const user = reasoningMessage(open.map((i) => ({ id: ids[i]!, item: items[i]! })), options.reasoningAbstractChars);
        const result = await call("reasoning", name, schema, user);
        usage = addUsage(usage, result.usage);
        const { byId } = matchById(open.map((i) => ids[i]!), result.data.reasons);
        for (const i of open) reasons[i] = byId.get(ids[i]!)?.reason.trim();
      }
      return { value: reasons.map((r) => r ?? MISSING_REASON), usage };
    },

    async themes(reasons: string[], maxThemes: number): Promise<ModelCall<Theme[]>> {
      const name = `screening_themes_${maxThemes}`;
      const schema = schemaFor(name, () => z.object({ themes: z.array(ThemeSchema).min(1).max(maxThemes) }));
      const user = `${reasonsBlock(reasons)}\n\nPropose at most ${maxThemes} themes.`;
      const result = await call("clustering", name, schema, user);
      return { value: result.data.themes, usage: result.usage };
    },

    async merge(themes: Theme[], maxClusters: number): Promise<ModelCall<Theme[]>> {
      const name = `screening_clusters_${maxClusters}`;
      const schema = schemaFor(name, () => z.object({ clusters: z.array(ThemeSchema).min(1).max(maxClusters) }));
      const user =
        `Themes found in different parts of the screening reasons:\n${dataBlock("themes", themes.map((t) => ({ label: t.label, description: t.description })))}\n\n` +
        `Merge overlapping themes into at most ${maxClusters} clusters that together cover all of them.`;
      const result = await call("clustering", name, schema, user);
      return { value: result.data.clusters, usage: result.usage };
    },

    async assign(reasons: string[], clusters: Theme[]): Promise<ModelCall<number[]>> {
      const name = `screening_assign_${reasons.length}x${clusters.length}`;
      const assignment = () => z.object({ id: z.string(), cluster: z.number().int().min(1).max(clusters.length) });
      const schema = schemaFor(name, () => z.object({ assignments: z.array(assignment()).length(reasons.length) }));
      const list = `Clusters:\n${clusters.map((t, i) => `${i + 1}. ${neutraliseMarkers(t.label)}: ${neutraliseMarkers(t.description)}`).join("\n")}`;
      const user = reasonsBlock(reasons);
      const result = await call("assignment", name, schema, user, list);
      // Matched by id; a reason left out gets -1 (the assignment stage puts it in the largest cluster).
      // Numbered from 1 in the prompt (people and models count from 1), from 0 in the pipeline.
      const { byId } = matchById(reasonIds(reasons.length), result.data.assignments);
      return { value: reasonIds(reasons.length).map((id) => (byId.get(id)?.cluster ?? 0) - 1), usage: result.usage };
    },
  };
}

function describeCriteria(frame: Pick<JobFrame, "criteria" | "questions">): string {
  const criteria = frame.criteria.length
    ? `Criteria:\n${frame.criteria.map((c, i) => `${i + 1}. [${c.type}]${c.name ? ` ${c.name}:` : ""} ${c.value}`).join("\n")}`
    : "Criteria: none were given; judge relevance to the research questions.";
  const questions = frame.questions.length ? `Research questions:\n${frame.questions.map((q) => `- ${q}`).join("\n")}` : "";
  return [criteria, questions].filter(Boolean).join("\n\n");
}

/** The papers of a labelling call: a data block of `{id, title, abstract}` records (libs/contracts prompt-data). */
function labellingMessage(papers: { id: string; paper: ScreeningPaper }[]): string {
  const records = papers.map(({ id, paper }) => ({ id, title: paper.title, abstract: paper.abstract }));
  return `Papers to screen (${papers.length}):\n${dataBlock("papers", records)}`;
}

/** The papers of a reasoning call, with the decision the labelling stage reached for each. */
function reasoningMessage(items: { id: string; item: ReasoningInput }[], abstractChars: number): string {
  const records = items.map(({ id, item }) => ({
    id,
    title: item.paper.title,
    abstract_excerpt: excerpt(item.paper.abstract, abstractChars),
    decision: item.decision,
    include_votes: `${item.includeVotes} of ${item.repetitions}`,
    criteria_verdicts: item.verdicts.map((v, c) => `${c + 1} ${v}`).join("; "),
  }));
  return `Papers to explain (${items.length}):\n${dataBlock("papers", records)}`;
}

/** Reasons are written from paper text, so they travel as data too. */
function reasonsBlock(reasons: string[]): string {
  const ids = reasonIds(reasons.length);
  return `Screening reasons (${reasons.length}):\n${dataBlock("reasons", reasons.map((reason, i) => ({ id: ids[i], reason })))}`;
}

function reasonIds(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `r${i + 1}`);
}

/** What a paper's reasoning says when the model gave none for it, even when asked twice. */
const MISSING_REASON = "No reasoning was returned for this paper.";

/** At most `max` characters, cut at a word where one is near, "…" included (so an excerpt is its own excerpt). */
function excerpt(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 1) return text.slice(0, max);
  const cut = text.slice(0, max - 1);
  const end = cut.lastIndexOf(" ");
  return `${cut.slice(0, end > max * 0.6 ? end : max - 1)}…`;
}
