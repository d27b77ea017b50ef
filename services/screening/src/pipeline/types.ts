import type { LlmUsage, ScreeningCriterion, ScreeningPaper } from "@litrev/contracts";

export const VERDICTS = ["met", "not_met", "unclear"] as const;
export type Verdict = (typeof VERDICTS)[number];

/** One repetition's judgement of one paper. */
export interface LabelVote {
  include: boolean;
  /** One verdict per criterion, in the job's criteria order. */
  verdicts: Verdict[];
}

/** What the reasoning stage tells the model about a labelled paper. */
export interface ReasoningInput {
  paper: ScreeningPaper;
  decision: "include" | "exclude";
  includeVotes: number;
  repetitions: number;
  /** Majority verdict per criterion. */
  verdicts: Verdict[];
}

export interface Theme {
  label: string;
  description: string;
}

export interface ModelCall<T> {
  value: T;
  usage: LlmUsage;
  /** What went wrong with the replies, in words, when some papers got fewer answers than asked. */
  trouble?: string | undefined;
}

/**
 * The language-model work of the four stages, behind one port: a live implementation (provider
 * calls through libs/llm) and a mock one (deterministic, no provider), chosen per job.
 */
export interface ScreeningModel {
  /**
   * Whether the provider ignores `n` (each vote a request of its own), found out before the first
   * labelling call where nothing declared or learned says so (a probe, whose usage comes back).
   * Absent: the model samples votes itself (mock, test doubles).
   */
  providerIgnoresN?(): Promise<ModelCall<boolean>>;
  /** `repetitions` independent votes for each paper of the batch. */
  /** With `spread`, each vote is sent in its own calls, regrouped per vote (see `voteGroups`). */
  label(papers: ScreeningPaper[], repetitions: number, spread?: VoteSpread): Promise<ModelCall<LabelVote[][]>>;
  /**
   * What `reason` will still need of a labelled paper (e.g. the title and an abstract excerpt):
   * the pipeline keeps only this once a paper is labelled, so a job's full texts are not all held.
   */
  keepForReasoning(paper: ScreeningPaper): ScreeningPaper;
  /** One short reasoning per paper. */
  reason(items: ReasoningInput[]): Promise<ModelCall<string[]>>;
  /** Themes found in a chunk of reasons (clustering, map step). */
  themes(reasons: string[], maxThemes: number): Promise<ModelCall<Theme[]>>;
  /** Themes merged into at most `maxClusters` clusters (clustering, reduce step). */
  merge(themes: Theme[], maxClusters: number): Promise<ModelCall<Theme[]>>;
  /** For each reason, the index of the cluster that fits it best. */
  assign(reasons: string[], clusters: Theme[]): Promise<ModelCall<number[]>>;
}

export type Decision = "include" | "exclude";

/**
 * One paper's result item, filled in stage by stage (labelling: score, decision, votes, verdicts;
 * reasoning: `reasoning`; assignment: `cluster_id`). It is the job's per-paper output, so nothing
 * is copied at the end.
 */
export interface PaperResult {
  id: ScreeningPaper["id"];
  /** Null for a paper the model lost (no full set of votes): it goes to a human, with `error` saying why. */
  final_score: number | null;
  cluster_id: number;
  reasoning: string;
  decision: Decision;
  votes: Decision[];
  criteria_verdicts: ({ name: string; type: string; verdict: Verdict } & Record<Verdict, number>)[];
  /** Set only for a paper the model lost. */
  error?: string;
}

/** The job-wide facts every stage's prompts and mock answers depend on. */
export interface JobFrame {
  criteria: ScreeningCriterion[];
  questions: string[];
  model: string;
  /** The provider model the alias pointed to at admission: every call of the job goes there. */
  resolvedModel?: string | undefined;
}

/**
 * How a pooled labelling unit is cut per vote: calls of `callSize` papers, `pool` calls a vote, each
 * call run through `gate`, the job's one window of calls in flight, which every unit shares: a unit
 * waiting on its last calls leaves its slots to the next unit's (no per-unit barrier).
 */
export interface VoteSpread {
  callSize: number;
  pool: number;
  gate: <T>(call: () => Promise<T>) => Promise<T>;
}
