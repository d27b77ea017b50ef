/**
 * Text normalisation for locating quotes, with a map back to the original text.
 *
 * Language models copy quotes imperfectly: curly quotes become straight ones, a non-breaking
 * space becomes a space, a line break or a double space collapses, case drifts, an accent is
 * dropped. Each original character is normalised on its own, so every normalised character
 * knows the span of the original it came from, and a match found in the normalised text maps
 * back to exact offsets in the original (docs/indexer.md, "Evidence").
 */

/** Punctuation look-alikes folded to one ASCII form. */
const FOLD: Record<string, string> = {
  "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u0060": "'", "\u00b4": "'",
  "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
  "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-", "\u00ad": "",
  "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "",
};

const MARKS = /\p{M}/gu;
const SPACE = /\s/u;

/** One code point's normalised form: compatibility-decomposed, marks removed, lower case, look-alikes folded. */
function normalizeChar(char: string): string {
  const folded = FOLD[char];
  if (folded !== undefined) return folded;
  if (SPACE.test(char)) return " ";
  const base = char.normalize("NFKD").toLowerCase().normalize("NFKD").replace(MARKS, "");
  let out = "";
  for (const c of base) out += FOLD[c] ?? (SPACE.test(c) ? " " : c);
  return out;
}

export interface NormalizedText {
  /** The normalised text: runs of whitespace are one space, no leading or trailing space. */
  text: string;
  /** For each normalised UTF-16 unit, where its original character starts and ends (UTF-16 offsets). */
  starts: Int32Array;
  ends: Int32Array;
}

/** Normalises `original`, keeping for every output unit the original span it came from. */
export function normalizeWithMap(original: string): NormalizedText {
  const units: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let offset = 0;
  for (const char of original) {
    const start = offset;
    offset += char.length;
    const normalized = normalizeChar(char);
    for (let i = 0; i < normalized.length; i++) {
      const unit = normalized[i] as string;
      if (unit === " " && (units.length === 0 || units[units.length - 1] === " ")) continue;
      units.push(unit);
      starts.push(start);
      ends.push(offset);
    }
  }
  if (units[units.length - 1] === " ") {
    units.pop();
    starts.pop();
    ends.pop();
  }
  return { text: units.join(""), starts: Int32Array.from(starts), ends: Int32Array.from(ends) };
}

/** The normalised form alone (for quotes, which need no map). */
export function normalizeText(text: string): string {
  return normalizeWithMap(text).text;
}
