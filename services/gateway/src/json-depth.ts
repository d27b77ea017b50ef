const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * Whether a JSON text nests objects and arrays deeper than `max`, found by one pass over the text
 * (strings skipped whole, brackets inside them ignored) before anything parses it: a parsed value
 * that deep overflows the stack of whatever walks it later (validation, serialisation). Malformed
 * text is not judged here; the parser reports it.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`, or -1 if it is never closed. */
function closingQuote(text: string, open: number): number {
  let j = text.indexOf('"', open + 1);
  while (j !== -1) {
    let backslashes = 0;
    for (let k = j - 1; text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return j;
    j = text.indexOf('"', j + 1);
  }
  return -1;
}
