import { describe, expect, it } from "vitest";
import { csvCell, csvRow } from "./csv";

/** A minimal RFC 4180 reader, to check that what is written reads back cell for cell. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (quoted && c === '"') quoted = false;
    else if (quoted) cell += c;
    else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += c;
  }
  return rows;
}

describe("csv", () => {
  it("quotes commas, quotes and line breaks, and reads back as written", () => {
    const cells = ['plain', 'a, b', 'say "no"', "two\nlines", "crlf\r\ninside", "ünïcødé — 中文"];
    const row = csvRow(cells);
    expect(row.endsWith("\r\n")).toBe(true);
    expect(parseCsv(row)).toEqual([cells]);
  });

  it("neutralises cells a spreadsheet would run as a formula", () => {
    for (const attack of ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\r=1"]) {
      const [[cell]] = parseCsv(csvRow([attack])) as [[string]];
      expect(cell).toBe(`'${attack}`);
    }
    // Ordinary text and numbers (negative ones too) are left as they are.
    expect(csvCell("include")).toBe("include");
    expect(csvCell(-0.5)).toBe("-0.5");
  });

  it("writes empty, boolean and list cells", () => {
    expect(csvRow([null, undefined, true, ["a", "b"], 3])).toBe(",,true,a; b,3\r\n");
  });
});
