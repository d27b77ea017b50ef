import { readFileSync } from "node:fs";
import { dirname, extname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { importReferences, keyIndex, stripHtml, type ImportedRecord, type ReferenceFormat } from "@litrev/references";
import { readReferenceFile } from "@litrev/references/node";

/**
 * Labelled reviews the harness screens: the built-in SYNERGY reviews in data/synergy/, or files of
 * your own plus its criteria (docs/evaluation.md): gzipped or plain JSON Lines of
 * `{id, title, abstract, included}`, or reference exports read by @litrev/references (CSV with
 * comma or semicolon and ASReview's `label_included`, RIS, PubMed NBIB), labelled by their own label
 * column or by a second file listing the included studies. HTML left in titles and abstracts by the
 * database they came from is stripped on loading.
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SYNERGY = resolve(ROOT, "data/synergy");

/** Same bounds as the screening request accepts for one paper. */
export const LabelledRecord = z.object({
  id: z.union([z.string().min(1).max(200), z.number().int()]),
  title: z.string().max(5_000).nullish().transform((v) => v ?? ""),
  abstract: z.string().max(50_000).nullish().transform((v) => v ?? ""),
  included: z.boolean(),
});
export type LabelledRecord = z.infer<typeof LabelledRecord>;

export const Criterion = z.object({
  name: z.string().max(1_000).default(""),
  type: z.enum(["include", "exclude"]),
  value: z.string().min(1).max(5_000),
});
export type Criterion = z.infer<typeof Criterion>;

/** What the screening request gets: its `criteria` and `questions` fields. */
export const CriteriaSpec = z.object({
  criteria: z.array(Criterion).max(200).default([]),
  questions: z.array(z.string().min(1).max(2_000)).max(50).default([]),
});
export type CriteriaSpec = z.infer<typeof CriteriaSpec>;

export interface LabelledReview {
  name: string;
  /** Where the records came from (a path, or several joined by ", "), for the report. */
  source: string;
  records: LabelledRecord[];
  criteria: CriteriaSpec;
  /** How reference files were read (null for JSON Lines). */
  import?: ImportSummary | null;
}

/** What importing reference files found, for the report. */
export interface ImportSummary {
  files: { name: string; format: ReferenceFormat; records: number }[];
  /** Records beyond the first of their duplicate group (by DOI, PMID or title), and the groups. */
  duplicates: number;
  duplicate_groups: number;
  merged: boolean;
  /** The list of included studies the labels came from, when they did not come with the records. */
  included_from: { files: string[]; studies: number; matched: number; unmatched: string[] } | null;
}

const ReviewMeta = z.looseObject({ name: z.string(), title: z.string(), eligibility_criteria: z.string(), citation: z.string().optional() });

function builtInMeta(): z.infer<typeof ReviewMeta>[] {
  return z.array(ReviewMeta).parse(JSON.parse(readFileSync(resolve(SYNERGY, "reviews.json"), "utf8")));
}

export function builtInNames(): string[] {
  return builtInMeta().map((review) => review.name);
}

/**
 * A review's prose eligibility criteria become one `include` criterion carrying the text as the
 * review states it (splitting prose into separate criteria would put our reading between the review
 * and the model), and the review's title becomes the research question.
 */
export function criteriaFromProse(text: string, title?: string): CriteriaSpec {
  return CriteriaSpec.parse({
    criteria: [{ name: "Eligibility criteria", type: "include", value: text.trim() }],
    questions: title ? [`Which studies belong in the systematic review "${title.trim()}"?`] : [],
  });
}

/**
 * A criteria file: JSON, either `{ "criteria": [...], "questions": [...] }` or a bare array of
 * `{name, type, value}`; any other file is prose, taken as one inclusion criterion.
 */
export function loadCriteriaFile(path: string): CriteriaSpec {
  const text = readFileSync(path, "utf8");
  if (extname(path).toLowerCase() !== ".json") {
    if (!text.trim()) throw new Error(`criteria file ${path} is empty`);
    return criteriaFromProse(text);
  }
  const json: unknown = JSON.parse(text);
  const parsed = CriteriaSpec.safeParse(Array.isArray(json) ? { criteria: json } : json);
  if (!parsed.success) throw new Error(`criteria file ${path}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

const startsAsJson = (text: string) => /^\s*\{/.test(text.slice(0, 1_000).replace(/^\uFEFF/, ""));

/** Whether a file (gzipped or plain) is JSON Lines: it starts with `{`. */
export function isJsonLines(path: string): boolean {
  return startsAsJson(readReferenceFile(path).text);
}

/** A labelled-records file: JSON Lines (gzipped or plain) when it starts with `{`, else a reference export with its own labels. */
export function loadRecords(path: string): LabelledRecord[] {
  const { name, text } = readReferenceFile(path);
  const records = startsAsJson(text) ? jsonlRecords(name, text) : loadReferenceFiles([path]).records;
  if (records.length === 0) throw new Error(`${path}: no records`);
  return records;
}

/** The record as the model should read it: HTML stripped from its title and abstract. */
function cleaned(record: LabelledRecord): LabelledRecord {
  return { ...record, title: stripHtml(record.title), abstract: stripHtml(record.abstract) };
}

/** JSON Lines of labelled records; every line is checked, errors name the line. */
function jsonlRecords(path: string, text: string): LabelledRecord[] {
  const records: LabelledRecord[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((line, i) => {
    if (!line.trim()) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new Error(`${path}:${i + 1}: not JSON`);
    }
    const parsed = LabelledRecord.safeParse(json);
    if (!parsed.success) throw new Error(`${path}:${i + 1}: ${z.prettifyError(parsed.error)}`);
    const key = String(parsed.data.id);
    if (seen.has(key)) throw new Error(`${path}:${i + 1}: duplicate id ${key}`);
    seen.add(key);
    records.push(cleaned(parsed.data));
  });
  return records;
}

/**
 * Reference exports (RIS, PubMed NBIB, CSV; several at once) as labelled records. The labels come
 * from the files (a CSV's `label_included`) or, given `included`, from files listing the studies the
 * review included: a record is included when it matches one of them by DOI, PMID or title, the
 * keys duplicates are found by.
 */
export function loadReferenceFiles(paths: readonly string[], options: { included?: readonly string[]; mergeDuplicates?: boolean } = {}): { records: LabelledRecord[]; summary: ImportSummary } {
  const result = importReferences(paths.map((path) => readReferenceFile(path)), { mergeDuplicates: options.mergeDuplicates === true });
  let records = result.records;
  let includedFrom: ImportSummary["included_from"] = null;
  if (options.included?.length) {
    const studies = importReferences(options.included.map((path) => readReferenceFile(path))).records;
    const labelled = labelByIncluded(records, studies);
    if (labelled.matched === 0) throw new Error(`none of the ${studies.length} studies in ${options.included.join(", ")} matches a record by DOI, PMID or title`);
    records = labelled.records;
    includedFrom = { files: [...options.included], studies: studies.length, matched: labelled.matched, unmatched: labelled.unmatched };
  }
  const unlabelled = records.filter((record) => record.included === null).length;
  if (unlabelled > 0) {
    throw new Error(
      `${unlabelled} of ${records.length} records in ${paths.join(", ")} have no label: give a CSV with a label_included column (1 or 0), or --included FILE listing the studies the review included`,
    );
  }
  return {
    records: records.map((record) => {
      const parsed = LabelledRecord.safeParse({ id: record.id, title: record.title, abstract: record.abstract, included: record.included });
      if (!parsed.success) throw new Error(`${record.origin.file}: record ${record.id}: ${z.prettifyError(parsed.error)}`);
      return parsed.data;
    }),
    summary: { files: result.files, duplicates: result.counts.duplicates, duplicate_groups: result.duplicates.length, merged: result.merged, included_from: includedFrom },
  };
}

/** Labels every record: included when one of `studies` matches it. Also says which studies matched nothing. */
export function labelByIncluded(records: readonly ImportedRecord[], studies: readonly ImportedRecord[]): { records: ImportedRecord[]; matched: number; unmatched: string[] } {
  const match = keyIndex(records);
  const hit = new Set<number>();
  const unmatched: string[] = [];
  for (const study of studies) {
    const found = match(study);
    if (found.length === 0) unmatched.push(study.id);
    for (const { index } of found) hit.add(index);
  }
  return { records: records.map((record, i) => ({ ...record, included: hit.has(i) })), matched: studies.length - unmatched.length, unmatched };
}

export function loadBuiltIn(name: string): LabelledReview {
  const meta = builtInMeta().find((review) => review.name === name);
  if (!meta) throw new Error(`unknown dataset ${name}; built-in: ${builtInNames().join(", ")}`);
  const path = resolve(SYNERGY, `${name}.jsonl.gz`);
  return { name, source: path, records: loadRecords(path), criteria: criteriaFromProse(meta.eligibility_criteria, meta.title) };
}

/**
 * `limit` records keeping the review's share of inclusions (at least one of each class when the
 * review has both), picked in a fixed pseudo-random order of their ids: the same limit always
 * gives the same records, and a small sample still has inclusions to measure recall on.
 */
export function sampleRecords(records: LabelledRecord[], limit: number): LabelledRecord[] {
  if (limit >= records.length) return records;
  const included = records.filter((r) => r.included);
  const excluded = records.filter((r) => !r.included);
  let take = Math.round((limit * included.length) / records.length);
  if (included.length > 0 && excluded.length > 0 && limit >= 2) take = Math.min(limit - 1, Math.max(1, take));
  take = Math.min(take, included.length, limit);
  const pick = (from: LabelledRecord[], n: number) =>
    [...from].sort((a, b) => order(a) - order(b) || String(a.id).localeCompare(String(b.id))).slice(0, n);
  const chosen = new Set([...pick(included, take), ...pick(excluded, limit - take)]);
  return records.filter((r) => chosen.has(r));
}

function order(record: LabelledRecord): number {
  let h = 0x811c9dc5;
  const text = String(record.id);
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
