const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Each byte's part outside strings: the per-byte loop does one table read instead of a chain of
 * comparisons. 0 (the rest): a number's or literal's character, or anything the parser will refuse.
 */
const SEPARATOR = 1; // whitespace, `,` and `:`
const STRING = 2; // `"`
const OPEN = 3; // `{` and `[`
const CLOSE = 4; // `}` and `]`
const KIND = new Uint8Array(256);
for (const c of " \t\n\r,:") KIND[c.charCodeAt(0)] = SEPARATOR;
KIND[QUOTE] = STRING;
for (const c of "{[") KIND[c.charCodeAt(0)] = OPEN;
for (const c of "}]") KIND[c.charCodeAt(0)] = CLOSE;

export interface JsonShapeLimits {
  /** Deepest nesting of `{` and `[`. */
  depth: number;
  /** Most values: objects, arrays, strings, numbers and literals, member names included. */
  values: number;
}

/** Which limit a text exceeds. */
export type JsonExcess = "depth" | "values";

/**
 * What parsing a JSON text would build, measured on its raw UTF-8 bytes one chunk at a time as
 * they arrive, before anything parses it: the nesting depth (a parsed value that deep overflows
 * the stack of whatever walks it later) and the number of values (what the parse costs in time and
 * memory: millions of `[]` cost seconds and gigabytes, where one long string costs little). Strings
 * are skipped whole, brackets inside them ignored, and the state carries across chunk boundaries.
 * Bytes of multi-byte characters are all ≥ 0x80, so none is taken for a bracket or a quote.
 * Malformed text is not judged here; the parser reports it.
 */
export class JsonShape {
  #values = 0;
  #depth = 0;
  #deepest = 0;
  #inString = false;
  #escaped = false;
  #inScalar = false;

  constructor(private readonly limits: JsonShapeLimits) {}

  get values(): number {
    return this.#values;
  }

  /** Scans the next chunk; the first limit the text so far exceeds, or null. */
  push(chunk: Uint8Array): JsonExcess | null {
    // Locals, not fields, in the per-byte loop: it runs over every byte of every body.
    let values = this.#values;
    let depth = this.#depth;
    let deepest = this.#deepest;
    let inString = this.#inString;
    let escaped = this.#escaped;
    let inScalar = this.#inScalar;
    for (let i = 0; i < chunk.length; i++) {
      if (inString) {
        // Strings are most of a real body: skip them with native searches, not byte by byte.
        if (escaped) {
          escaped = false;
          continue;
        }
        const end = closingQuote(chunk, i);
        if (end < 0) {
          // The string goes on in the next chunk, escaped there if this one ends in an odd run of backslashes.
          escaped = backslashesBefore(chunk, chunk.length, i) % 2 === 1;
          break;
        }
        inString = false;
        i = end;
        continue;
      }
      switch (KIND[chunk[i]!]) {
        case STRING:
          values++;
          inString = true;
          inScalar = false;
          break;
        case OPEN:
          values++;
          if (++depth > deepest) deepest = depth;
          inScalar = false;
          break;
        case CLOSE:
          depth--;
          inScalar = false;
          break;
        case SEPARATOR:
          inScalar = false;
          break;
        default:
          // The first character of a number, `true`, `false` or `null`.
          if (!inScalar) values++;
          inScalar = true;
      }
    }
    this.#values = values;
    this.#depth = depth;
    this.#deepest = deepest;
    this.#inString = inString;
    this.#escaped = escaped;
    this.#inScalar = inScalar;
    // Checked once per chunk: a chunk is small next to either limit's cost.
    if (deepest > this.limits.depth) return "depth";
    if (values > this.limits.values) return "values";
    return null;
  }
}

/** The index of the first unescaped quote at or after `from` (a string's content starts there), or -1. */
function closingQuote(chunk: Uint8Array, from: number): number {
  for (let q = chunk.indexOf(QUOTE, from); q >= 0; q = chunk.indexOf(QUOTE, q + 1)) {
    if (backslashesBefore(chunk, q, from) % 2 === 0) return q;
  }
  return -1;
}

/** How many backslashes come right before `end`, not looking before `from`. */
function backslashesBefore(chunk: Uint8Array, end: number, from: number): number {
  let k = end - 1;
  while (k >= from && chunk[k] === BACKSLASH) k--;
  return end - 1 - k;
}
