const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

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
      const c = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) inString = false;
        continue;
      }
      if (c === QUOTE) {
        values++;
        inString = true;
        inScalar = false;
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        values++;
        if (++depth > deepest) deepest = depth;
        inScalar = false;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        depth--;
        inScalar = false;
      } else if (c === COMMA || c === COLON || c === SPACE || c === LF || c === CR || c === TAB) {
        inScalar = false;
      } else if (!inScalar) {
        // The first character of a number, `true`, `false` or `null`.
        values++;
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
