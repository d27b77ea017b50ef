import type { Evidence } from "@litrev/contracts";
import { normalizeText, normalizeWithMap, type NormalizedText } from "./normalize";

export type EvidenceSource = Evidence["source"];

/** A quote as the model gave it, before the service has checked it. */
export interface ClaimedQuote {
  quote?: unknown;
  source?: unknown;
}

/** Why a claimed quote was not kept. */
export type DropReason = "not_found" | "too_short" | "not_text";

interface DroppedQuote {
  quote: string;
  reason: DropReason;
}

export interface VerifiedEvidence {
  evidence: Evidence[];
  dropped: DroppedQuote[];
}

/** Shorter quotes (after normalisation) match almost anywhere, so they prove nothing. */
const MIN_QUOTE_LENGTH = 3;

/** Models mark omissions as `...`, `…` or `[...]`; each side must be found on its own. */
const ELLIPSIS = /\s*(?:\[\s*(?:\.\.\.|…)\s*\]|\.{3,}|…)\s*/u;
/** Quotation marks a model wraps around a quote. */
const WRAPPING = /^[\s"'“”‘’«»`]+|[\s"'“”‘’«»`]+$/gu;
/** Punctuation at the ends of a normalised quote that the source may or may not carry. */
const EDGE_PUNCTUATION = /^[\s.,;:!?'"()[\]{}-]+|[\s.,;:!?'"()[\]{}-]+$/gu;

/**
 * Finds the quotes a model claims in the record's title and abstract. Exact matches are tried
 * first; then a whitespace-, case-, accent- and punctuation-insensitive match whose offsets are
 * mapped back to the original text. The `quote` returned is always the original text at
 * [start, end), so `source_text.slice(start, end) === quote` holds for every element.
 */
export class EvidenceLocator {
  readonly #texts: Record<EvidenceSource, string>;
  readonly #normalized: Partial<Record<EvidenceSource, NormalizedText>> = {};

  constructor(texts: { title: string; abstract: string }) {
    this.#texts = { title: texts.title, abstract: texts.abstract };
  }

  /** Checks every claimed quote; keeps the ones found (once per span), reports the rest. */
  verify(claims: readonly ClaimedQuote[]): VerifiedEvidence {
    const evidence: Evidence[] = [];
    const dropped: DroppedQuote[] = [];
    const seen = new Set<string>();
    for (const claim of claims) {
      if (typeof claim?.quote !== "string") {
        dropped.push({ quote: String(claim?.quote ?? ""), reason: "not_text" });
        continue;
      }
      const preferred = claim.source === "title" || claim.source === "abstract" ? claim.source : undefined;
      const located = this.locateQuote(claim.quote, preferred);
      if (!Array.isArray(located)) {
        dropped.push({ quote: claim.quote, reason: located.reason });
        continue;
      }
      for (const item of located) {
        const key = `${item.source}:${item.start}:${item.end}`;
        if (seen.has(key)) continue;
        seen.add(key);
        evidence.push(item);
      }
    }
    return { evidence, dropped };
  }

  /**
   * One claimed quote as evidence elements: one element, or one per fragment when the model
   * elided text with an ellipsis (every fragment must be found, in either source).
   */
  locateQuote(quote: string, preferred?: EvidenceSource): Evidence[] | { reason: DropReason } {
    const fragments = quote
      .split(ELLIPSIS)
      .map((part) => part.replace(WRAPPING, ""))
      .filter((part) => part.length > 0);
    if (fragments.length === 0) return { reason: "too_short" };
    const found: Evidence[] = [];
    for (const fragment of fragments) {
      const match = this.locate(fragment, preferred);
      if ("reason" in match) return match;
      found.push(match);
    }
    return found;
  }

  /** One contiguous quote: exact in the preferred source, exact in the other, then normalised in each. */
  locate(quote: string, preferred?: EvidenceSource): Evidence | { reason: DropReason } {
    const needle = normalizeText(quote).replace(EDGE_PUNCTUATION, "");
    if (needle.length < MIN_QUOTE_LENGTH) return { reason: "too_short" };
    const order: EvidenceSource[] = preferred === "title" ? ["title", "abstract"] : ["abstract", "title"];
    for (const source of order) {
      const text = this.#texts[source];
      const start = text.indexOf(quote);
      if (start >= 0 && quote.length > 0) return { quote, source, start, end: start + quote.length, match: "exact" };
    }
    for (const source of order) {
      const normalized = this.#normalizedOf(source);
      const at = normalized.text.indexOf(needle);
      if (at < 0) continue;
      const start = normalized.starts[at] as number;
      const end = normalized.ends[at + needle.length - 1] as number;
      return { quote: this.#texts[source].slice(start, end), source, start, end, match: "normalized" };
    }
    return { reason: "not_found" };
  }

  #normalizedOf(source: EvidenceSource): NormalizedText {
    return (this.#normalized[source] ??= normalizeWithMap(this.#texts[source]));
  }
}
