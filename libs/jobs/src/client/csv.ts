import type { CsvMode } from "@litrev/contracts";

/**
 * CSV cells and rows as RFC 4180 writes them (comma-separated, CRLF line ends, a cell quoted when it
 * holds a comma, quote or line break, quotes doubled). For a spreadsheet (`guard`), a text cell
 * that a spreadsheet could read as a formula gets a leading apostrophe (the OWASP "CSV injection"
 * advice): one starting with `=`, `+`, `-`, `@`, a tab or a carriage return, also after leading
 * white space (LibreOffice and Google Sheets trim it) and in the full-width or small forms some
 * apps fold to ASCII (`＝ ＋ － ＠ ﹢ ﹣ ﹦`, the minus sign `−`). Every cell is guarded, ids
 * included (they come from imported files); a plain number (`-2`, `+1.5`) is no formula and stays
 * as it is, so a join by id still works. For scripts (R, Python), values are written as they are.
 */

export type { CsvMode };

const FORMULA_START = /^[\s\u3000]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\u2212]/;
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/;
const NEEDS_QUOTES = /[",\r\n]/;

/** The byte-order mark that makes Excel read a CSV file as UTF-8. */
export const UTF8_BOM = "\uFEFF";

/** One cell's text: null and undefined are empty, arrays are joined with "; ", objects as JSON. */
export function csvCell(value: unknown, guard = true): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  if (typeof value === "boolean") return value ? "true" : "false";
  const text = Array.isArray(value) ? value.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join("; ") : typeof value === "string" ? value : JSON.stringify(value);
  const safe = guard && FORMULA_START.test(text) && !PLAIN_NUMBER.test(text) ? `'${text}` : text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** One record, CRLF-terminated. `guard`: the formula guard on every text cell. */
export function csvRow(values: readonly unknown[], guard = true): string {
  return `${values.map((value) => csvCell(value, guard)).join(",")}\r\n`;
}
