/**
 * Reading the exports reviewers have at hand: RFC 4180 CSV (ASReview's and this repository's
 * example, data/nagtegaal_2019.csv.gz) and titles or abstracts that still carry HTML from the
 * database they were exported from.
 */

/** RFC 4180 CSV into rows of cells: quoted cells may hold commas, doubled quotes and line breaks; a BOM is dropped. */
export function parseCsv(input: string): string[][] {
  const text = input.replace(/^\uFEFF/, "");
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c !== '"') cell += c;
      else if (text[i + 1] === '"') {
        cell += '"';
        i++;
      } else quoted = false;
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

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
