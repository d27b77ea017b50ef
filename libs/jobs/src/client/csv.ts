/**
 * CSV cells and rows as RFC 4180 writes them (comma-separated, CRLF line ends, a cell quoted when it
 * holds a comma, quote or line break, quotes doubled), made safe to open in a spreadsheet: a text
 * cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return would be read as a formula, so
 * it gets a leading apostrophe (the OWASP "CSV injection" advice). Numbers are written as numbers.
 */

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One cell's text: null and undefined are empty, arrays are joined with "; ", objects as JSON. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  if (typeof value === "boolean") return value ? "true" : "false";
  const text = Array.isArray(value) ? value.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join("; ") : typeof value === "string" ? value : JSON.stringify(value);
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** One record, CRLF-terminated. */
export function csvRow(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(",")}\r\n`;
}
