import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { parseCsvRows } from "@litrev/references";
import { ROOT } from "../../scripts/lib/launch";

/**
 * The real records of `data/nagtegaal_2019.csv.gz` (2,019 citations, CC0; see data/README.md), for
 * tests and benchmarks that need realistic abstracts: punctuation, Unicode, mojibake, empty abstracts.
 */
export const NAGTEGAAL_CSV = join(ROOT, "data/nagtegaal_2019.csv.gz");

export interface DatasetRow {
  record_id: string;
  title: string;
  abstract: string;
}

/** RFC 4180 CSV (comma-separated, as the data file and the service's exports are) into rows of cells. */
export const parseCsv = (text: string): string[][] => parseCsvRows(text, { delimiter: "," });

let cached: DatasetRow[] | undefined;

function readText(path: string): string {
  const bytes = readFileSync(path);
  return (path.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8");
}

/** Every row of the dataset, parsed once per process. */
export function loadNagtegaal(path = NAGTEGAAL_CSV): DatasetRow[] {
  if (cached && path === NAGTEGAAL_CSV) return cached;
  const [header, ...rows] = parseCsv(readText(path).replace(/^\uFEFF/, ""));
  if (!header) throw new Error(`${path} is empty`);
  const col = (name: string) => {
    const index = header.indexOf(name);
    if (index < 0) throw new Error(`${path} has no column ${name}`);
    return index;
  };
  const [id, title, abstract] = [col("record_id"), col("title"), col("abstract")];
  const parsed = rows
    .filter((r) => r.length >= header.length)
    .map((r) => ({ record_id: r[id] as string, title: r[title] as string, abstract: r[abstract] as string }));
  if (path === NAGTEGAAL_CSV) cached = parsed;
  return parsed;
}

/** Indexer input records, `count` of them; rows repeat with fresh ids past the end of the file. */
export function indexerRecords(count: number, options: { withAbstractOnly?: boolean } = {}) {
  const rows = loadNagtegaal().filter((r) => !options.withAbstractOnly || r.abstract.trim() !== "");
  return Array.from({ length: count }, (_, i) => {
    const row = rows[i % rows.length] as DatasetRow;
    const round = Math.floor(i / rows.length);
    return { ID: round === 0 ? row.record_id : `${row.record_id}-r${round}`, Title: row.title, Abstract: row.abstract };
  });
}
