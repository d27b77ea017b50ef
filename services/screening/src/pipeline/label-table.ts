import type { ScreeningCriterion, ScreeningPaper } from "@litrev/contracts";
import { VERDICTS, type Decision, type LabelVote, type PaperResult, type Verdict } from "./types";

/** Votes per paper kept as bits: the contract caps repetitions at 20. */
const MAX_VOTES = 32;

/**
 * What labelling leaves of each paper, packed into typed arrays rather than objects: its id, its
 * include votes (bits), and per criterion how many votes said met / not met / unclear. At 50,000
 * papers this is a few MB, where the votes as objects were tens; every later stage and the final
 * result items are built from it.
 */
export class LabelTable {
  readonly ids: ScreeningPaper["id"][];
  readonly #includeBits: Uint32Array;
  readonly #voteCounts: Uint8Array;
  /** Per paper, per criterion: counts of met, not_met, unclear. */
  readonly #verdicts: Uint8Array;

  constructor(
    readonly size: number,
    readonly criteria: readonly Pick<ScreeningCriterion, "name" | "type">[],
  ) {
    this.ids = new Array(size);
    this.#includeBits = new Uint32Array(size);
    this.#voteCounts = new Uint8Array(size);
    this.#verdicts = new Uint8Array(size * criteria.length * VERDICTS.length);
  }

  set(index: number, id: ScreeningPaper["id"], votes: readonly LabelVote[]): void {
    if (votes.length > MAX_VOTES) throw new RangeError(`at most ${MAX_VOTES} votes per paper, got ${votes.length}`);
    this.ids[index] = id;
    let bits = 0;
    const base = index * this.criteria.length * VERDICTS.length;
    this.#verdicts.fill(0, base, base + this.criteria.length * VERDICTS.length);
    votes.forEach((vote, r) => {
      if (vote.include) bits |= 1 << r;
      for (let c = 0; c < this.criteria.length; c++) {
        const v = VERDICTS.indexOf(vote.verdicts[c] as Verdict);
        if (v >= 0) this.#verdicts[base + c * VERDICTS.length + v]!++;
      }
    });
    this.#includeBits[index] = bits >>> 0;
    this.#voteCounts[index] = votes.length;
  }

  /** Whether the paper's votes are in (labelling may stop early: a job over its cost ceiling). */
  labelled(index: number): boolean {
    return this.ids[index] !== undefined;
  }

  /** Include votes of a paper. */
  score(index: number): number {
    let bits = this.#includeBits[index]!;
    let count = 0;
    for (; bits !== 0; bits &= bits - 1) count++;
    return count;
  }

  decision(index: number, threshold: number): Decision {
    return this.score(index) >= threshold ? "include" : "exclude";
  }

  votes(index: number): Decision[] {
    const bits = this.#includeBits[index]!;
    return Array.from({ length: this.#voteCounts[index]! }, (_, r) => ((bits >>> r) & 1 ? "include" : "exclude"));
  }

  tally(index: number, criterion: number): Record<Verdict, number> {
    const at = (index * this.criteria.length + criterion) * VERDICTS.length;
    return { met: this.#verdicts[at]!, not_met: this.#verdicts[at + 1]!, unclear: this.#verdicts[at + 2]! };
  }

  /** The most frequent verdict per criterion; ties resolve towards `unclear`, then `met`. */
  majority(index: number): Verdict[] {
    return this.criteria.map((_, c) => {
      const counts = this.tally(index, c);
      const order: Verdict[] = ["unclear", "met", "not_met"];
      let best: Verdict = "unclear";
      for (const verdict of order) if (counts[verdict] > counts[best]) best = verdict;
      return best;
    });
  }

  /** A paper's result item (its reasoning and cluster as the later stages left them). */
  result(index: number, threshold: number, reasoning: string, clusterId: number): PaperResult {
    const majority = this.majority(index);
    return {
      id: this.ids[index]!,
      final_score: this.score(index),
      cluster_id: clusterId,
      reasoning,
      decision: this.decision(index, threshold),
      votes: this.votes(index),
      criteria_verdicts: this.criteria.map((criterion, c) => ({ name: criterion.name, type: criterion.type, verdict: majority[c]!, ...this.tally(index, c) })),
    };
  }
}
