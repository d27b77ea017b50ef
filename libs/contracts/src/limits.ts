import { z } from "zod";
import type { ValidationIssue } from "./errors";
import { MAX_INDEXER_FIELDS, MAX_INDEXER_JOB_RECORDS, MAX_INDEXER_RUN_RECORDS, MODE_RECORD_LIMIT } from "./indexer";
import { MAX_SCREENING_PAPERS } from "./screening";
import { LIMIT_CEILINGS } from "./ceilings";
import { laxNumber } from "./lax-input";

const limit = (fallback: number, ceiling: number) => z.coerce.number().int().min(1).max(ceiling).default(fallback);

/**
 * Every bound on one request's work, from the environment (parsed once by the gateway). Defaults
 * fit real reviews (tens of thousands of papers, a few dozen criteria) with room to spare.
 */
export const RequestLimits = z.object({
  MAX_SCREENING_PAPERS: limit(MAX_SCREENING_PAPERS, LIMIT_CEILINGS.papers),
  MAX_SCREENING_CRITERIA: limit(200, LIMIT_CEILINGS.criteria),
  MAX_CRITERION_CHARS: limit(5_000, LIMIT_CEILINGS.criterionChars),
  MAX_REPETITIONS: limit(20, LIMIT_CEILINGS.repetitions),
  /** papers × repetitions × max(1, criteria): the verdicts a screening job produces. */
  MAX_WORK_UNITS: limit(20_000_000, 1_000_000_000),
  /** Estimated size of a job's results, in millions of characters (the poll body is one string). */
  MAX_RESULTS_MCHARS: limit(400, LIMIT_CEILINGS.resultsMillionChars),
  MAX_TITLE_CHARS: limit(5_000, LIMIT_CEILINGS.title),
  MAX_ABSTRACT_CHARS: limit(50_000, LIMIT_CEILINGS.abstract),
  MAX_INDEXER_RUN_RECORDS: limit(MAX_INDEXER_RUN_RECORDS, LIMIT_CEILINGS.runRecords),
  MAX_INDEXER_JOB_RECORDS: limit(MAX_INDEXER_JOB_RECORDS, LIMIT_CEILINGS.records),
  MAX_INDEXER_FIELDS: limit(MAX_INDEXER_FIELDS, LIMIT_CEILINGS.fields),
  /** Criteria in one consolidate / refine / generate request. */
  MAX_REQUEST_CRITERIA: limit(500, LIMIT_CEILINGS.criteria),
  MAX_LIST_LIMIT: limit(1_000, LIMIT_CEILINGS.listLimit),
  /** Nesting of `{` and `[` in a request body, checked before the body is parsed. */
  MAX_JSON_DEPTH: limit(64, 1_000),
  /**
   * Values in a request body (objects, arrays, strings, numbers, literals, member names), counted
   * before the body is parsed: parsing costs time and memory per value. Room for a 50,000-record
   * indexer job with about 16 extra columns per record.
   */
  MAX_JSON_VALUES: limit(2_000_000, 100_000_000),
});
export type RequestLimits = z.infer<typeof RequestLimits>;

export const DEFAULT_REQUEST_LIMITS: RequestLimits = RequestLimits.parse({});

/**
 * Per-item size assumptions of the result estimates: a screening result row without its criteria
 * (id, score, cluster, decision and a reasoning of a few sentences), each criterion verdict
 * besides its name, and one extracted indexer value with its evidence quote.
 */
const SCREENING_ROW_CHARS = 1_000;
const VERDICT_CHARS = 80;
const VOTE_CHARS = 10;
const INDEXER_ROW_CHARS = 100;
const INDEXER_VALUE_CHARS = 400;

/** An upper estimate of a screening job's results, in characters of JSON. */
export function screeningResultChars(papers: number, repetitions: number, criterionNames: readonly string[]): number {
  const perPaper = SCREENING_ROW_CHARS + repetitions * VOTE_CHARS + criterionNames.reduce((sum, name) => sum + name.length + VERDICT_CHARS, 0);
  return papers * perPaper;
}

/** An upper estimate of an indexer job's results, in characters of JSON. */
export function indexerResultChars(records: number, fields: number): number {
  return records * (INDEXER_ROW_CHARS + fields * INDEXER_VALUE_CHARS);
}

type Body = Record<string, unknown>;
type Check = (body: Body, limits: RequestLimits) => ValidationIssue[];

const asBody = (value: unknown): Body | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Body) : undefined;

function tooLong(field: string, list: unknown, max: number): ValidationIssue[] {
  if (!Array.isArray(list) || list.length <= max) return [];
  return [{ type: "too_long", loc: ["body", field], msg: `List should have at most ${max} item${max === 1 ? "" : "s"}` }];
}

/** Read as the contract will read it (lax: "40" is 40), so a numeric string cannot slip past a bound. */
function tooBig(field: string, raw: unknown, max: number): ValidationIssue[] {
  const value = laxNumber(raw);
  if (typeof value !== "number" || value <= max) return [];
  return [{ type: "less_than_equal", loc: ["body", field], msg: `Input should be less than or equal to ${max}` }];
}

/** The first over-long string property of any item (one issue per field, so a 20,000-item list cannot give 20,000 issues). */
function longStrings(field: string, list: unknown, key: string, max: number): ValidationIssue[] {
  if (!Array.isArray(list)) return [];
  for (let i = 0; i < list.length; i++) {
    const value = asBody(list[i])?.[key];
    if (typeof value === "string" && value.length > max) {
      return [{ type: "string_too_long", loc: ["body", field, i, key], msg: `String should have at most ${max} characters` }];
    }
  }
  return [];
}

function overWork(units: number, max: number, detail: string): ValidationIssue[] {
  if (units <= max) return [];
  return [{ type: "value_error", loc: ["body"], msg: `Value error, ${detail} (docs/limits.md)` }];
}

export const screeningJobLimits: Check = (body, l) => {
  const papers = Array.isArray(body.papers) ? body.papers.length : 0;
  const criteria = Array.isArray(body.criteria) ? body.criteria : [];
  const given = laxNumber(body.repetitions);
  const repetitions = typeof given === "number" && given >= 1 ? Math.floor(given) : 5;
  const shape = [
    ...tooLong("papers", body.papers, l.MAX_SCREENING_PAPERS),
    ...tooLong("criteria", body.criteria, l.MAX_SCREENING_CRITERIA),
    ...tooBig("repetitions", body.repetitions, l.MAX_REPETITIONS),
    ...longStrings("criteria", criteria, "value", l.MAX_CRITERION_CHARS),
    ...longStrings("papers", body.papers, "title", l.MAX_TITLE_CHARS),
    ...longStrings("papers", body.papers, "abstract", l.MAX_ABSTRACT_CHARS),
  ];
  if (shape.length > 0) return shape;
  const units = papers * repetitions * Math.max(1, criteria.length);
  const names = criteria.map((c) => asBody(c)?.name).map((n) => (typeof n === "string" ? n : ""));
  const chars = screeningResultChars(papers, repetitions, names);
  return [
    ...overWork(
      units,
      l.MAX_WORK_UNITS,
      `papers × repetitions × criteria is ${units.toLocaleString("en")} (${papers} × ${repetitions} × ${Math.max(1, criteria.length)}); ` +
        `at most ${l.MAX_WORK_UNITS.toLocaleString("en")} per job: split the papers into several jobs`,
    ),
    ...overWork(
      chars,
      l.MAX_RESULTS_MCHARS * 1_000_000,
      `the results of this job would take about ${Math.ceil(chars / 1_000_000)} million characters, ` +
        `more than the ${l.MAX_RESULTS_MCHARS} million a job may return: split the papers into several jobs or use fewer criteria`,
    ),
  ];
};

export function indexerRecords(body: Body, l: RequestLimits, run: boolean): ValidationIssue[] {
  const issues = [
    ...tooLong("records", body.records, l.MAX_INDEXER_JOB_RECORDS),
    ...tooLong("fields", body.fields, l.MAX_INDEXER_FIELDS),
    ...longStrings("records", body.records, "Title", l.MAX_TITLE_CHARS),
    ...longStrings("records", body.records, "Abstract", l.MAX_ABSTRACT_CHARS),
  ];
  if (issues.length > 0 || !Array.isArray(body.records)) return issues;
  const mode = typeof body.mode === "string" && body.mode in MODE_RECORD_LIMIT ? (body.mode as keyof typeof MODE_RECORD_LIMIT) : "full";
  const processed = Math.min(body.records.length, MODE_RECORD_LIMIT[mode]);
  if (run && processed > l.MAX_INDEXER_RUN_RECORDS) {
    return [
      {
        type: "value_error",
        loc: ["body", "records"],
        msg:
          `Value error, a synchronous run processes at most ${l.MAX_INDEXER_RUN_RECORDS} records (${processed} requested); ` +
          "use POST /v1/indexer/jobs for larger sets, or mode test/sample",
      },
    ];
  }
  const fields = Array.isArray(body.fields) ? body.fields.length : 0;
  const chars = indexerResultChars(processed, fields);
  return overWork(
    chars,
    l.MAX_RESULTS_MCHARS * 1_000_000,
    `the results of this job would take about ${Math.ceil(chars / 1_000_000)} million characters, ` +
      `more than the ${l.MAX_RESULTS_MCHARS} million a job may return: split the records into several jobs or extract fewer fields`,
  );
}

export const indexerFieldsLimits: Check = (body, l) => tooLong("fields", body.fields, l.MAX_INDEXER_FIELDS);

/**
 * What one paper (or indexer record) may take on average in the JSON of the largest request the
 * default body limit admits: an id, a title and an abstract of about 1,800 characters.
 */
export const PAPER_JSON_BYTES = 2048;

export const screeningEstimateLimits: Check = (body, l) => tooBig("repetitions", body.repetitions, l.MAX_REPETITIONS);
export const indexerJobLimits: Check = (body, l) => indexerRecords(body, l, false);

/** The configured checks of each operation's body, by operation name (`operations` in operations.ts; a job kind declares its own). */
export const BODY_CHECKS: Record<string, Check> = {
  indexerRun: (body, l) => indexerRecords(body, l, true),
  refineFields: indexerFieldsLimits,
  generateCriteria: (body, l) => tooLong("existing_criteria", body.existing_criteria, l.MAX_REQUEST_CRITERIA),
  refineCriteria: (body, l) => tooLong("current_criteria", body.current_criteria, l.MAX_REQUEST_CRITERIA),
  consolidate: (body, l) => tooLong("criteria", body.criteria, l.MAX_REQUEST_CRITERIA),
};

/** The `limit` of a job listing, as a query string carries it, over the configured maximum. */
export function listLimitIssues(query: unknown, limits: RequestLimits): ValidationIssue[] {
  const raw = asBody(query)?.limit;
  const value = typeof raw === "string" ? Number(raw) : raw;
  if (typeof value !== "number" || !(value > limits.MAX_LIST_LIMIT)) return [];
  return [{ type: "less_than_equal", loc: ["query", "limit"], msg: `Input should be less than or equal to ${limits.MAX_LIST_LIMIT}` }];
}
