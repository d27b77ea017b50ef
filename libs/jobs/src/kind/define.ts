import type { z } from "zod";
import type { JobService, Provenance } from "@litrev/contracts";
import type { PromptInstructions } from "../finished/report";
import type { JobHandler } from "../worker/types";

/** The fields admission reads from every kind's create request. */
export interface KindRequest {
  model: string;
  project_id?: number | null | undefined;
  max_estimated_cost_usd?: number | null | undefined;
}

/** What admission has settled before the kind builds its job. */
export interface AdmissionFacts {
  /** Items in the job's list (staged by the gateway or in the request). */
  count: number;
  /** What the model alias means now, through the live alias table: the job is pinned to it. */
  resolved: string;
  /** Whether that model has a price (no price: no estimate figure and no actual cost). */
  priced: boolean;
}

/** A kind's estimate: the spec's figure, and the kind's own forecast of the bill where it makes one. */
export interface KindEstimate {
  estimated_cost_usd: number;
  forecast_cost_usd?: number | null | undefined;
  forecast_provider_n?: string | null | undefined;
}

/** The kind's own part of a new job. */
export interface KindJob {
  /** The job's `config` as polls show it. */
  config: Record<string, unknown>;
  /** The command's small parameters (admission adds `cost_ceiling` to a capped job's). */
  params: Record<string, unknown>;
  /** Every input field but the list: the list's head, read by the worker first. */
  input: Record<string, unknown>;
  /** Live extras of the pending state besides usage, actual cost and provenance. */
  extra?: Record<string, unknown>;
  provenance?: Provenance | undefined;
  /** The state's `model_version` until the provider names its own. */
  modelVersion: string;
}

/**
 * One job kind, declared once by the service that runs it. From it `jobKindHandlers` and
 * `serveJobKind` make the admission (one pricing path through the live aliases), the estimate,
 * reads, the worker and its shutdown. The read side — operations, list name, one active job per
 * project, views, exports, report wording — is the contract's (`jobKind(service)`).
 */
export interface JobKind<Create extends KindRequest = KindRequest, Estimate extends { model: string } = { model: string }> {
  service: JobService;
  /** The create request as it travels over NATS (its list may be empty: the gateway staged it). */
  createMessage: z.ZodType<Create>;
  /** The most items a job may have (the list itself is the contract's: `jobKind(service).list`). */
  maxItems: number;
  /** The spec's default model of the kind (the service config's model comes before it). */
  defaultModel: string;
  /** The estimate request a create request of `count` items amounts to. */
  estimateOf(request: Create, count: number): Estimate;
  /** The estimate, priced through the alias table given (always the live one). */
  estimate(request: Estimate, aliases: Readonly<Record<string, string>>): KindEstimate;
  /**
   * Finds out, before the estimate route answers, what the forecast depends on and the kind does
   * not know yet (screening: whether the provider honours `n`). Never throws; admission skips it.
   */
  beforeEstimate?(request: Estimate): Promise<void>;
  /** An upper estimate of the job's results in characters of JSON (its storage reservation, docs/limits.md). */
  resultChars(request: Create, count: number): number;
  /** What a refused ceiling names after "for" ("20 papers × 3 repetitions"). */
  ceilingScope(request: Create, count: number): string;
  /** A job that never calls a provider (a mock run): no ceiling, no key kept, no actual cost. */
  unmetered?(request: Create): boolean;
  /** The kind's part of the job, from the request and what admission settled. */
  admit(request: Create, facts: AdmissionFacts): KindJob;
  /** Fields of the 202 body besides id, status and progress. */
  accepted?: Record<string, unknown>;
  /** The instructions of the kind's built-in prompts, for reports. */
  prompts?: PromptInstructions;
  /** Runs one job on a worker. */
  run: JobHandler;
}

/** Checks a declaration's types once, where it is written. */
export function defineJobKind<Create extends KindRequest, Estimate extends { model: string }>(kind: JobKind<Create, Estimate>): JobKind<Create, Estimate> {
  return kind;
}
