import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { FakeChatRequest, RespondContext } from "./fake-types";
import { promptRecords } from "./prompt-records";

/**
 * Oracle mode of the fake provider: screening labelling calls are answered from a labelled
 * dataset's true decisions, each vote flipped at known rates. Every vote of an included paper says
 * "include" with probability `sensitivity`; every vote of an excluded paper says "exclude" with
 * probability `specificity`. Votes are independent draws from a seeded hash, so a run is
 * reproducible and the harness's figures can be checked against values known in advance:
 * recall at "at least t of R votes" is P(Binomial(R, sensitivity) ≥ t), and so on.
 *
 * Papers are recognised by the text the screening service puts in a labelling prompt: the user
 * message's papers data block, one `{id, title, abstract}` record per line (libs/contracts
 * prompt-data; services/screening live model). Each decision quotes its paper's id.
 * Calls of other stages (reasoning, clustering, assignment) are left to the fake's generated reply.
 */

export interface OracleRecord {
  title: string;
  abstract: string;
  included: boolean;
}

export interface OracleOptions {
  records: Iterable<OracleRecord>;
  /** Per-vote probability that an included paper gets an include vote. */
  sensitivity: number;
  /** Per-vote probability that an excluded paper gets an exclude vote. */
  specificity: number;
  seed?: string | number;
}

export interface OracleStats {
  /** Votes answered from the labels. */
  votes: number;
  /** Papers in labelling prompts that matched no record (their votes are generated, not oracle). */
  unknownPapers: number;
}

export interface Oracle {
  /** A `respond` hook for the fake provider: labelling replies from the labels, undefined for other calls. */
  respond(request: FakeChatRequest, context: RespondContext): unknown;
  stats(): OracleStats;
}

const LABELLING_SCHEMA = /^screening_labels_/;
const VERDICTS = ["met", "not_met", "unclear"] as const;
/** Most prompt characters of an abstract used to tell papers apart (titles repeat in real exports). */
const ABSTRACT_KEY_CHARS = 200;

export function createOracle(options: OracleOptions): Oracle {
  for (const [name, rate] of [["sensitivity", options.sensitivity], ["specificity", options.specificity]] as const) {
    if (!(rate >= 0 && rate <= 1)) throw new Error(`oracle ${name} must be within [0, 1], got ${rate}`);
  }
  const seed = String(options.seed ?? 1);
  const labels = new Map<string, boolean>();
  for (const record of options.records) labels.set(paperKey(record.title, record.abstract), record.included);
  // Votes already given per paper: a provider that ignores `n` is asked once per vote, and each
  // later request for the same paper must draw a fresh vote rather than repeat the first.
  const drawn = new Map<string, number>();
  let votes = 0;
  let unknownPapers = 0;

  return {
    respond(request, context) {
      if (!LABELLING_SCHEMA.test(request.response_format?.json_schema?.name ?? "")) return undefined;
      const generated = context.generated as { decisions?: { criteria: string[]; include: boolean }[] };
      const papers = promptPapers(request);
      if (!Array.isArray(generated.decisions) || papers.length !== generated.decisions.length) return undefined;
      const decisions = generated.decisions.map((decision, i) => {
        const key = paperKey(papers[i]!.title, papers[i]!.abstract);
        const truth = labels.get(key);
        if (truth === undefined) {
          unknownPapers++;
          return { ...decision, id: papers[i]!.id };
        }
        const vote = drawn.get(key) ?? 0;
        drawn.set(key, vote + 1);
        votes++;
        const include = drawVote(seed, key, vote, truth, options);
        // Verdicts follow the vote, so the per-criterion tallies look like a consistent judge.
        const criteria = decision.criteria.map((_, c) => (include ? "met" : VERDICTS[1 + (hash(`${key}|${vote}|${c}`) % 2)]!));
        return { id: papers[i]!.id, criteria, include };
      });
      return { decisions };
    },
    stats: () => ({ votes, unknownPapers }),
  };
}

/**
 * The include votes the oracle gives a record in a job of `repetitions` votes per paper: what the
 * job's `final_score` for it will be. Lets a benchmark draw many oracle jobs without running them.
 */
export function oracleScore(record: OracleRecord, repetitions: number, options: Omit<OracleOptions, "records">): number {
  const seed = String(options.seed ?? 1);
  const key = paperKey(record.title, record.abstract);
  let score = 0;
  for (let vote = 0; vote < repetitions; vote++) if (drawVote(seed, key, vote, record.included, options)) score++;
  return score;
}

/** One vote: include with probability `sensitivity` for an included paper, 1 − `specificity` otherwise. */
function drawVote(seed: string, key: string, vote: number, truth: boolean, rates: Pick<OracleOptions, "sensitivity" | "specificity">): boolean {
  const u = uniform(`${seed}|${key}|${vote}`);
  return truth ? u < rates.sensitivity : u >= rates.specificity;
}

/** A gzipped JSON Lines file of `{title, abstract, included}` records (the harness's dataset format). */
export function loadOracleRecords(path: string): OracleRecord[] {
  const text = gunzipSync(readFileSync(path)).toString("utf8");
  return text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => {
      const row = JSON.parse(line) as { title?: unknown; abstract?: unknown; included?: unknown };
      return { title: String(row.title ?? ""), abstract: String(row.abstract ?? ""), included: row.included === true };
    });
}

/** The papers of a labelling prompt, in order, as the service wrote them (its papers data block). */
export function promptPapers(request: FakeChatRequest): { id: string; title: string; abstract: string }[] {
  return promptRecords(request, "papers").map((r) => ({ id: String(r.id ?? ""), title: String(r.title ?? ""), abstract: String(r.abstract ?? "") }));
}

/** The same key from a record and from its prompt text (an empty title or abstract is shown as a placeholder). */
function paperKey(title: string, abstract: string): string {
  const t = title.trim() === "(no title)" ? "" : title.trim();
  const a = abstract.trim() === "(no abstract)" ? "" : abstract.trim();
  return `${normalise(t)}\u0000${normalise(a).slice(0, ABSTRACT_KEY_CHARS)}`;
}

function normalise(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
}

/** FNV-1a then a murmur-style finaliser: well-spread 32 bits from any string. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function uniform(text: string): number {
  return hash(text) / 0x1_0000_0000;
}
