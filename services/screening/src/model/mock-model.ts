import type { ScreeningPaper } from "@litrev/contracts";
import { ZERO_USAGE } from "@litrev/llm";
import { VERDICTS, type JobFrame, type LabelVote, type ModelCall, type ReasoningInput, type ScreeningModel, type Theme } from "../pipeline/types";

const NOTE = "mock mode: no language model was called";
const free = <T>(value: T): ModelCall<T> => ({ value, usage: ZERO_USAGE });

/** FNV-1a, 32-bit: a stable hash so the same input always gives the same mock answer. */
export function stableHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** One 32-bit value from two (a multiply-xorshift mix): cheap, stable, well spread. */
function mixHash(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b + 0x9e3779b9, 0x85ebca6b), 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x27d4eb2d);
  return (h ^ (h >>> 15)) >>> 0;
}

/**
 * Mock mode (spec): the same four stages with deterministic answers derived from hashes of the
 * input, placeholder texts that say so, and no provider call (so no key is needed).
 *
 * Mock jobs need no key and have no cost ceiling, so their work must stay small: the criteria's
 * text is hashed once per job and each paper's once per paper; a vote and a verdict then cost one
 * integer mix each, whatever the length of the criteria (docs/limits.md).
 */
export function createMockModel(frame: JobFrame, hash: (text: string) => number = stableHash): ScreeningModel {
  const criteriaHash = hash(frame.criteria.map((c) => `${c.type}:${c.value}`).join("|"));
  return {
    async label(papers: ScreeningPaper[], repetitions: number) {
      const votes = papers.map((paper) => {
        const paperHash = mixHash(hash(`${paper.id}|${paper.title}`), criteriaHash);
        return Array.from({ length: repetitions }, (_, r): LabelVote => {
          const seed = mixHash(paperHash, r);
          return {
            include: seed % 100 < 45,
            verdicts: frame.criteria.map((_, c) => VERDICTS[mixHash(seed, c + 1) % VERDICTS.length]!),
          };
        });
      });
      return free(votes);
    },
    // Mock reasoning is built from the votes alone.
    keepForReasoning: (paper: ScreeningPaper) => ({ id: paper.id, title: "", abstract: "" }),
    async reason(items: ReasoningInput[]) {
      return free(
        items.map(
          (item) =>
            `Placeholder reasoning (${NOTE}): ${item.includeVotes} of ${item.repetitions} mock repetitions voted to include this paper, so it is marked ${item.decision}.`,
        ),
      );
    },
    async themes(reasons: string[]) {
      return free(placeholderThemes(Math.min(3, reasons.length)));
    },
    async merge(themes: Theme[], maxClusters: number) {
      return free(placeholderThemes(Math.min(3, maxClusters, themes.length)));
    },
    async assign(reasons: string[], clusters: Theme[]) {
      return free(reasons.map((reason, i) => hash(`${reason}|${i}`) % clusters.length));
    },
  };
}

function placeholderThemes(count: number): Theme[] {
  return Array.from({ length: count }, (_, i) => ({
    label: `Placeholder cluster ${String.fromCharCode(65 + i)} (mock)`,
    description: `Placeholder cluster from ${NOTE}; a live job derives clusters from the papers' reasoning.`,
  }));
}
