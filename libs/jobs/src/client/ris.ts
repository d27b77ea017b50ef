/**
 * RIS records as reference managers and screening tools import them: `TAG  - value` lines, each
 * record from `TY` to `ER`. A value is one line: line breaks inside it become spaces (a reader would
 * take the next line for a continuation or a tag). Which tags carry a job's outcome, and why: docs/reporting.md.
 */

export interface RisRecord {
  id: string;
  title: string;
  abstract: string;
  keywords: readonly string[];
  notes: readonly string[];
}

const oneLine = (value: string) => value.replace(/\s*[\r\n\u2028\u2029]+\s*/g, " ").trim();

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
