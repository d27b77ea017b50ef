import { readFileSync } from "node:fs";
import { dirname, extname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { z } from "zod";
import { parseCsv, stripHtml } from "./text-files";

/**
 * Labelled reviews the harness screens: the built-in SYNERGY reviews in data/synergy/, or a file of
 * your own plus its criteria (docs/evaluation.md): gzipped or plain JSON Lines of
 * `{id, title, abstract, included}`, or CSV with ASReview's columns (`title`, `abstract`,
 * `label_included`; ids from `record_id` or `id`, else the row number). HTML left in titles and
 * abstracts by the database they came from is stripped on loading.
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
  /** Where the records came from (a path), for the report. */
  source: string;
  records: LabelledRecord[];
  criteria: CriteriaSpec;
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

/** A labelled-records file by its name: CSV (`.csv`, `.csv.gz`) or JSON Lines (anything else), gzipped or plain. */
export function loadRecords(path: string): LabelledRecord[] {
  const raw = readFileSync(path);
  const text = (raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString("utf8");
  const records = /\.csv(\.gz)?$/i.test(path) ? csvRecords(path, text) : jsonlRecords(path, text);
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

const INCLUDED = new Set(["1", "true", "yes", "included", "include"]);
const EXCLUDED = new Set(["0", "false", "no", "excluded", "exclude"]);

/** CSV with ASReview's columns; a row with no usable label is an error naming its line (row). */
function csvRecords(path: string, text: string): LabelledRecord[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  const column = (...names: string[]) => header.findIndex((h) => names.includes(h.trim().toLowerCase()));
  const [id, title, abstract, label] = [column("record_id", "id"), column("title"), column("abstract"), column("label_included", "included")];
  if (title < 0 || label < 0) throw new Error(`${path}: a CSV needs the columns title and label_included (ASReview's names); found ${header.join(", ")}`);
  const records: LabelledRecord[] = [];
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    if (row.every((cell) => cell.trim() === "")) return;
    const labelText = (row[label] ?? "").trim().toLowerCase();
    if (!INCLUDED.has(labelText) && !EXCLUDED.has(labelText)) throw new Error(`${path}: row ${i + 2}: label_included is "${row[label] ?? ""}", expected 1 or 0`);
    const parsed = LabelledRecord.safeParse({
      id: id >= 0 && row[id]?.trim() ? row[id]!.trim() : String(i + 1),
      title: row[title] ?? "",
      abstract: abstract >= 0 ? (row[abstract] ?? "") : "",
      included: INCLUDED.has(labelText),
    });
    if (!parsed.success) throw new Error(`${path}: row ${i + 2}: ${z.prettifyError(parsed.error)}`);
    const key = String(parsed.data.id);
    if (seen.has(key)) throw new Error(`${path}: row ${i + 2}: duplicate id ${key}`);
    seen.add(key);
    records.push(cleaned(parsed.data));
  });
  return records;
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
