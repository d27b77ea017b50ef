import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { importReferences, toIndexerRecord, toScreeningPaper, type ImportResult } from "@litrev/references";
import { readReferenceFile } from "@litrev/references/node";

/**
 * `npm run import -- FILE... [--out papers.jsonl] [--merge-duplicates] [--indexer] [--duplicates dups.json]`:
 * reference exports (RIS, PubMed NBIB/MEDLINE, Web of Science, BibTeX, EndNote XML, CSV; gzipped or
 * plain) into the service's paper records as JSON Lines, one `{id, title, abstract, …}` (or `{ID,
 * Title, Abstract, …}` with --indexer) a line with the bibliographic fields the record came with,
 * and the counts and the duplicate groups on stderr. See docs/import.md.
 */

export const IMPORT_USAGE = `usage: npm run import -- FILE... [--out PATH] [--merge-duplicates] [--indexer] [--duplicates PATH]

  FILE                  RIS (PubMed, Embase/Ovid, Scopus, Web of Science), PubMed NBIB/MEDLINE, Web of
                        Science plain text, BibTeX, EndNote XML, or CSV (comma or semicolon; ASReview,
                        Rayyan or Covidence columns); .gz is fine
  --out PATH            where the JSON Lines go (default: standard output)
  --merge-duplicates    keep one record per duplicate group (default: keep all, report the groups)
  --indexer             write indexer records {ID, Title, Abstract, …} instead of screening papers {id, title, abstract, …}
  --duplicates PATH     write every duplicate group (ids and the keys they share) as JSON`;

/** Duplicate groups listed on stderr, and ids listed of each; --duplicates writes them all. */
const LISTED_GROUPS = 20;
const LISTED_IDS = 10;

export interface ImportIo {
  stdout: (text: string) => void;
  stderr: (line: string) => void;
}

export function runImport(argv: string[], io: ImportIo): number {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { out: { type: "string" }, "merge-duplicates": { type: "boolean" }, indexer: { type: "boolean" }, duplicates: { type: "string" }, help: { type: "boolean" } },
    });
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\n${IMPORT_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    io.stderr(IMPORT_USAGE);
    return values.help ? 0 : 2;
  }
  const result = importReferences(positionals.map((path) => readReferenceFile(path)), { mergeDuplicates: values["merge-duplicates"] === true });
  const toRecord = values.indexer ? toIndexerRecord : toScreeningPaper;
  const jsonl = result.records.map((record) => `${JSON.stringify(toRecord(record))}\n`).join("");
  if (values.out) writeFileSync(values.out, jsonl);
  else io.stdout(jsonl);
  if (values.duplicates) writeFileSync(values.duplicates, `${JSON.stringify(result.duplicates, null, 2)}\n`);
  for (const line of summary(result, values.out ?? "standard output")) io.stderr(line);
  return 0;
}

function summary(result: ImportResult, out: string): string[] {
  const { counts } = result;
  const lines = result.files.map((file) => `${file.name}: ${file.records} records (${file.format})`);
  lines.push(
    `records: ${counts.read} read, ${counts.duplicates} duplicates in ${result.duplicates.length} groups${result.duplicates.length ? (result.merged ? " (merged)" : " (kept; --merge-duplicates keeps one of each)") : ""}, ${counts.records} written to ${out}`,
    `without abstract: ${counts.withoutAbstract}; without title: ${counts.withoutTitle}`,
  );
  for (const group of result.duplicates.slice(0, LISTED_GROUPS)) {
    const ids = group.ids.length > LISTED_IDS ? `${group.ids.slice(0, LISTED_IDS).join(", ")} … and ${group.ids.length - LISTED_IDS} more` : group.ids.join(", ");
    lines.push(`  duplicates ${ids} (same ${group.keys.map((k) => (k.key === "title" ? "title" : `${k.key} ${k.value}`)).join(", ")})`);
  }
  if (result.duplicates.length > LISTED_GROUPS) lines.push(`  … and ${result.duplicates.length - LISTED_GROUPS} more groups (--duplicates PATH writes them all)`);
  return lines;
}
