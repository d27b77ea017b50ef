import { indexerKind } from "./indexer-kind";
import type { JobKindTable } from "./job-contract";
import { screeningKind } from "./screening-kind";
import type { JobService } from "./subjects";

/**
 * The registry of job kinds: every kind declared once (`defineJobContract`), from which the
 * gateway's routes, the operations, OpenAPI rows, NATS users and permissions, trace sampling and the
 * launch list are derived (no list of kinds is written anywhere else). A kind outside this package
 * (a test's) is added with `registerJobKind` before the gateway is built (docs/jobs.md).
 */
export const JOB_KINDS: Record<JobService, JobKindTable> = { screening: screeningKind, indexer: indexerKind };

/** The job kinds, in the registry's order (kept current by `registerJobKind`). */
export const JOB_SERVICES: JobService[] = Object.keys(JOB_KINDS);

/** The kind of a service, if it runs jobs. */
export const jobKindOf = (service: string): JobKindTable | undefined => (Object.hasOwn(JOB_KINDS, service) ? JOB_KINDS[service] : undefined);

/** The kind of a job service (one that is not a kind's is a programming error). */
export function jobKind(service: string): JobKindTable {
  const kind = jobKindOf(service);
  if (!kind) throw new Error(`'${service}' is not a declared job kind`);
  return kind;
}

/** Adds a declared kind to the registry (the built-in kinds are in it already). */
export function registerJobKind(kind: JobKindTable): JobKindTable {
  if (!jobKindOf(kind.name)) JOB_SERVICES.push(kind.name);
  JOB_KINDS[kind.name] = kind;
  return kind;
}

/** A backend service's configuration id (a kind may name its own: the spec calls the indexer's `extraction`). */
export const configServiceId = (service: string): string => jobKindOf(service)?.configId ?? service;

/** The configuration ids of every backend service. */
export const configServiceIds = (): string[] => ["criteria", ...JOB_SERVICES.map(configServiceId)];

export * from "./job-contract";
