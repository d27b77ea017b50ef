import type { CsvMode } from "@litrev/contracts";

/**
 * CSV cells and rows as RFC 4180 writes them (comma-separated, CRLF line ends, a cell quoted when it
 * holds a comma, quote or line break, quotes doubled). For a spreadsheet (`guard`), a text cell
 * starting with `=`, `+`, `-`, `@`, a tab or a carriage return would be read as a formula, so it
 * gets a leading apostrophe (the OWASP "CSV injection" advice); numbers are written as numbers. For
 * scripts (R, Python), values are written as they are.
 */

export type { CsvMode };

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** The byte-order mark that makes Excel read a CSV file as UTF-8. */
export const UTF8_BOM = "\uFEFF";

/** One cell's text: null and undefined are empty, arrays are joined with "; ", objects as JSON. */
export function csvCell(value: unknown, guard = true): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  if (typeof value === "boolean") return value ? "true" : "false";
  const text = Array.isArray(value) ? value.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join("; ") : typeof value === "string" ? value : JSON.stringify(value);
  const safe = guard && FORMULA_START.test(text) ? `'${text}` : text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * One record, CRLF-terminated. `guard`: the formula guard on text cells, except the first `asIs`
 * cells (an id column: `-2` must stay `-2` for a join by id).
 */
export function csvRow(values: readonly unknown[], guard = true, asIs = 0): string {
  return `${values.map((value, i) => csvCell(value, guard && i >= asIs)).join(",")}\r\n`;
}
