/**
 * Text as the model should read it: titles and abstracts still carry HTML from the database they were
 * exported from (`<i>`, `<sup>`, `&amp;`), and line-wrapped exports leave runs of whitespace.
 */

/** An HTML element tag (`<i>`, `</sup>`, `<br/>`, `<span class="x">`); "p < 0.05" and "a<b" are left alone. */
const TAG = /<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?\/?>/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", ndash: "–", mdash: "—", hellip: "…" };
const ENTITY = /&(#\d{1,7}|#x[0-9A-Fa-f]{1,6}|[A-Za-z]+);/g;

/** Text without HTML tags, common entities decoded, whitespace folded: what the model should read. */
export function stripHtml(text: string): string {
  if (!text.includes("<") && !text.includes("&")) return text;
  const decoded = text.replace(TAG, " ").replace(ENTITY, (whole, name: string) => {
    if (name.startsWith("#x") || name.startsWith("#X")) return safeCodePoint(parseInt(name.slice(2), 16)) ?? whole;
    if (name.startsWith("#")) return safeCodePoint(Number(name.slice(1))) ?? whole;
    return NAMED[name.toLowerCase()] ?? whole;
  });
  return decoded.replace(/\s+/g, " ").trim();
}

function safeCodePoint(code: number): string | undefined {
  return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : undefined;
}

/** A title or abstract as imported: HTML stripped and every run of whitespace one space. */
export function cleanText(text: string | null | undefined): string {
  return stripHtml(text ?? "").replace(/\s+/g, " ").trim();
}

/**
 * A file's bytes as text: UTF-8 (a byte-order mark is kept for the readers, which drop it), or, when
 * the bytes are not UTF-8, Windows-1252, which older EndNote and Excel exports are written in.
 */
export function decodeReferenceBytes(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return new TextDecoder("windows-1252").decode(bytes);
  }
}
