import { decodeHTMLStrict } from "entities";
/**
 * Text as the model should read it: titles and abstracts still carry HTML from the database they were
 * exported from (`<i>`, `<sup>`, `&amp;`), and line-wrapped exports leave runs of whitespace.
 */

/**
 * An HTML, JATS or MathML element tag (`<i>`, `</sup>`, `<br/>`, `<span class="x">`, `<jats:italic>`);
 * "p < 0.05" and "a<b" are left alone.
 */
const TAG = /<\/?([A-Za-z][A-Za-z0-9-]*(?::[A-Za-z][A-Za-z0-9-]*)?)(?:\s[^<>]*)?\/?>/g;
/** Tags inside a word or a formula (`CO<sub>2</sub>`, `<i>in vivo</i>`): removed without a space. */
const INLINE = /^(?:[a-z]+:)?(?:i|b|u|em|strong|sub|sup|sc|small|span|italic|bold|underline|monospace|inline-formula|named-content|styled-content|mi|mn|mo|mrow|msub|msup|mtext)$/i;

/** Passes of tag removal and entity decoding at most (escaped markup: `&amp;lt;i&amp;gt;` takes three). */
const MAX_PASSES = 8;

/**
 * Text without markup, the one cleaning every reader and every export applies to titles and
 * abstracts: HTML/JATS/MathML tags removed (inline ones without a space, the rest as one), then every
 * HTML entity decoded (`&reg;`, `&#8211;`, `&amp;`; only with its semicolon, so `AT&T` stays), again
 * until nothing changes: databases escape JATS once or twice (`&lt;xref&gt;`, `&amp;lt;`), and
 * the cleaning must give the same text when applied again (an export re-imported). Whitespace is
 * folded. A comparison (`p &lt; 0.05`) ends as `p < 0.05`: a `<` not followed by a letter is no tag.
 */
export function stripHtml(text: string): string {
  if (!text.includes("<") && !text.includes("&")) return text;
  let current = text;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const next = decodeHTMLStrict(current.replace(TAG, (_whole, name: string) => (INLINE.test(name) ? "" : " ")));
    if (next === current) break;
    current = next;
  }
  return current.replace(/\s+/g, " ").trim();
}

/** A title or abstract as imported or exported: markup removed (`stripHtml`) and every run of whitespace one space. */
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
