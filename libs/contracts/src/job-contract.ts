import { z } from "zod";
import { ActiveJobQuery, JobIdParams, ListJobsQuery } from "./common";
import type { ValidationIssue } from "./errors";
import type { IndexerJobRecord } from "./indexer";
import { ArtifactWritten, JobDeleted, type JobReport } from "./job-exports";
import type { RequestLimits } from "./limits";
import type { Provenance } from "./provenance";
import type { ScreeningJobRecord } from "./screening";
import type { BackendService } from "./subjects";

/**
 * How an operation uses the client's provider key (`X-LLM-API-Key`): `request` — the service calls
 * the provider while answering (the key is sealed for that one request); `job` — a job admission
 * keeps it for its worker (sealed for that one job). Without one, the gateway forwards no key.
 */
export type ProviderKeyUse = "request" | "job";

/**
 * One backend operation: the NATS request it takes and the reply it gives. The gateway and the
 * owning service both parse with these schemas, so the contract is checked on each side.
 */
export interface Operation<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  service: BackendService;
  name: string;
  request: Req;
  response: Res;
  providerKey?: ProviderKeyUse;
}

export function op<Req extends z.ZodType, Res extends z.ZodType>(service: BackendService, name: string, request: Req, response: Res, providerKey?: ProviderKeyUse): Operation<Req, Res> {
  return { service, name, request, response, ...(providerKey ? { providerKey } : {}) };
}

type Json = Record<string, unknown>;

export const jsonArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const jsonRecord = (value: unknown): Json => (value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {});

/** A job's record as the kinds' views read it (a live state or a stored row). */
export type JobKindRecord = ScreeningJobRecord & IndexerJobRecord;

/** A finished job's results: per-item results and the small extras stored beside them. */
export interface JobKindResults {
  items: Json[];
  result: Json;
}

/** A kind's CSV layout, fixed by one sample item (criteria and fields are the same for every item). */
export interface ExportTable {
  header: string[];
  row(item: Json): unknown[];
}

/** A configured bound on a request body (docs/limits.md), checked on the raw body before its schema. */
export type BodyCheck = (body: Json, limits: RequestLimits) => ValidationIssue[];

/** What the methods paragraph's sentences of every kind are made of (libs/jobs words them). */
export interface MethodsWords {
  /** The day the job ran. */
  when: string;
  /** The tool, the model and where the texts went ("litrev version 1.2, using the model … through …"). */
  tool: string;
  /** The sampling settings, or "" when none were recorded. */
  settings: string;
  plural(n: number, one: string, many: string): string;
  /** Ends the text with a full stop unless it has one. */
  sentence(text: string): string;
}

/**
 * One job kind, declared once: everything but its pipeline (the service's `defineJobKind`,
 * libs/jobs). Its operations, HTTP routes, OpenAPI rows, NATS user and permissions, trace sampling
 * and launch entry are derived from it (docs/jobs.md).
 */
export interface JobKindDeclaration {
  /** The kind's service: its NATS user, subjects, buckets and routes (`/v1/<name>/…`). */
  name: string;
  /** What operation ids call it (`create<Title>Job`, `estimate<Title>`). */
  title: string;
  /** What summaries call one job ("screening job"). */
  jobNoun: string;
  /** The kind's OpenAPI tag. */
  description: string;
  /** The kind's configuration id (default: its name). */
  configId?: string;
  schemas: {
    create: z.ZodType;
    /** The creation's 202 body (default: id, status and progress). */
    created?: z.ZodType;
    job: z.ZodType;
    listItem: z.ZodType;
    estimate: z.ZodType;
    estimated: z.ZodType;
    /** The export's query, when the kind adds to the common one. */
    exportQuery?: z.ZodObject;
  };
  /** The configured bounds of the creation and estimate bodies, and the bytes of the largest creation they admit. */
  limits?: { create?: BodyCheck; estimate?: BodyCheck; largestCreation?: (limits: RequestLimits) => number };
  /** Whether a creation keeps the client's provider key for the worker (default: yes). */
  providerKey?: boolean;
  /** The creation's item list (staged by the gateway when large). */
  list: string;
  /** One active job per (owner, project): a second creation is a 409 naming the first. */
  exclusiveProject: boolean;
  /** The poll response's field that holds the items. */
  itemsField: string;
  /** The keys of an input item's id (also the result item's), title and abstract. */
  inputKeys: { id: string; title: string; abstract: string };
  /** The spec's poll body: terminal `results` when the job ended, `partial` items while it runs. */
  view(record: JobKindRecord, results: JobKindResults | null, partial: readonly Json[]): unknown;
  listItem(record: JobKindRecord): unknown;
  export: {
    /** Whether the columns depend on an item at all (a job with no criteria or no fields needs none). */
    needsSample(record: JobKindRecord): boolean;
    /** Whether this item shows the job's criteria or fields (a lost paper may not). */
    isSample(item: Json): boolean;
    table(record: JobKindRecord, result: Json, sample: Json | undefined): ExportTable;
    /** The JSON Lines object of one item. */
    line(result: Json): (item: Json) => Json;
    /** What one item's RIS record carries of the job's outcome: keywords (`KW`) and notes (`N1`), one line each. */
    ris(record: JobKindRecord, result: Json): (item: Json) => { keywords: string[]; notes: string[] };
  };
  report: {
    task: string;
    /** The report's heading: the task, its size (`count` items) and what it was asked. */
    title(count: number, config: Json, provenance: Provenance | null): string;
    /** The methods paragraph's sentences on what was done and its outcome. */
    methods(report: JobReport, words: MethodsWords): string[];
    /** What the paragraph asks the reader to fill in when the job carries no validation. */
    unvalidated?: string;
    limitations: string[];
    /** What one item is called (plural). */
    noun: string;
    /** The item field that names its outcome. */
    outcomeField: string;
    /** Whether an item counts as an error besides carrying one. */
    failedOutcome?: string;
    /** Whether the method repeats votes per item (its report names repetitions, threshold and rule). */
    votes: boolean;
    /** The criteria an excluded item fell on (its reasons in a PRISMA flow), or none. */
    exclusionReasons(item: Json): string[];
    /** The config field holding how many items the job was given. */
    countField: string;
  };
}

/** The NATS operations of a kind, by convention (the owning service serves them). */
export interface JobOperations {
  create: Operation;
  get: Operation;
  list: Operation;
  active: Operation;
  estimate: Operation;
  artifact: Operation;
  cancel: Operation;
  delete: Operation;
}

/** A declared kind with its derived operations. */
export interface JobKindTable extends JobKindDeclaration {
  operations: JobOperations;
}

/** The 202 body of every kind's creation. */
const JobCreated = z.object({ job_id: z.string(), status: z.literal("pending"), progress: z.number() });

/** Derives a kind's operations from its declaration: the same names and shapes for every kind. */
export function defineJobContract(kind: JobKindDeclaration): JobKindTable {
  const { name, schemas } = kind;
  return {
    ...kind,
    operations: {
      create: op(name, "create-job", schemas.create, schemas.created ?? JobCreated, kind.providerKey === false ? undefined : "job"),
      get: op(name, "get-job", JobIdParams, schemas.job),
      list: op(name, "list-jobs", ListJobsQuery, z.array(schemas.listItem)),
      active: op(name, "active-job", ActiveJobQuery, schemas.job.nullable()),
      estimate: op(name, "estimate", schemas.estimate, schemas.estimated),
      artifact: op(name, "write-artifact", JobIdParams, ArtifactWritten),
      cancel: op(name, "cancel-job", JobIdParams, schemas.job),
      delete: op(name, "delete-job", JobIdParams, JobDeleted),
    },
  };
}
