/**
 * RIS records as reference managers and screening tools import them: `TAG  - value` lines, each
 * record from `TY` to `ER`. A value is one line: line breaks inside it become spaces (a reader would
 * take the next line for a continuation or a tag, or a forged record). Which tags carry a job's outcome, and why: docs/reporting.md.
 */

export interface RisRecord {
  id: string;
  title: string;
  abstract: string;
  keywords: readonly string[];
  notes: readonly string[];
}

/**
 * Every line or record separator a reader may split on (Python's `str.splitlines()`: LF, CR, VT, FF,
 * FS, GS, RS, NEL, U+2028, U+2029), with the white space around it, folds into one space.
 */
// eslint-disable-next-line no-control-regex -- the control characters are what it folds
const LINE_BREAKS = /[\s\x1c-\x1e\x85]*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029][\s\x1c-\x1e\x85]*/g;
const oneLine = (value: string) => value.replace(LINE_BREAKS, " ").trim();

/** One record, CRLF line ends (as most databases write RIS), empty tags left out. */
export function risRecord(record: RisRecord): string {
  const lines: string[] = ["TY  - JOUR"];
  const tag = (name: string, value: string) => {
    const text = oneLine(value);
    if (text) lines.push(`${name}  - ${text}`);
  };
  tag("ID", record.id);
  tag("TI", record.title);
  tag("AB", record.abstract);
  for (const keyword of record.keywords) tag("KW", keyword);
  for (const note of record.notes) tag("N1", note);
  lines.push("ER  - ", "");
  return lines.join("\r\n");
}
