import { randomUUID } from "node:crypto";
import { DEFAULT_JOB_OWNER, headers, OWNER_ID, ServiceError, type JobService } from "@litrev/contracts";
import { keyBindings, type KeySealer } from "../key-sealer";

type HeaderOf = (name: string) => string | undefined;

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The client a read or creation is made for, as the gateway names it (`x-litrev-owner`), or
 * undefined when no owner is given (a caller on NATS other than the gateway: no ownership check).
 */
export function requestOwner(header: HeaderOf): string | undefined {
  const value = header(headers.owner);
  if (value === undefined) return undefined;
  if (!OWNER_ID.test(value)) throw new ServiceError("validation", "Malformed owner id", { simple: true });
  return value;
}

/** The owner a new job gets: the requesting client, else the default owner. */
export const creatorOf = (header: HeaderOf): string => requestOwner(header) ?? DEFAULT_JOB_OWNER;

/**
 * The id of a job being admitted: the one the gateway chose (its provider key is sealed for that
 * id), else a fresh one. A sealed key without the id it is bound to is refused.
 */
export function admissionJobId(header: HeaderOf): string {
  const chosen = header(headers.jobId);
  if (chosen === undefined) {
    if (header(headers.sealedProviderKey)) throw new ServiceError("validation", "A sealed provider key needs the job id it was sealed for", { simple: true });
    return randomUUID();
  }
  if (!JOB_ID.test(chosen)) throw new ServiceError("validation", "Malformed job id", { simple: true });
  return chosen;
}

/**
 * The job's sealed provider key as it is kept for its worker (never opened into the command), after
 * checking here that it opens for this job: a token sealed for another job, or under a secret the
 * services do not have, is refused now (401) rather than failing the job later.
 */
export function jobProviderKey(sealer: KeySealer, service: JobService, jobId: string, header: HeaderOf): string | null {
  const sealed = header(headers.sealedProviderKey);
  if (!sealed) return null;
  sealer.open(sealed, keyBindings.job(service, jobId));
  return sealed;
}

/** The 409 text: the holder's id only for its own client, so another client learns no job id. */
export function projectConflictMessage(
  kind: string,
  projectId: number,
  holder: { job_id: string; status: string; owner?: string | undefined },
  requester: string | undefined,
): string {
  const own = requester === undefined || (holder.owner ?? DEFAULT_JOB_OWNER) === requester;
  const which = own ? `(job_id ${holder.job_id})` : "(started with another service key)";
  return `A ${kind} job for project ${projectId} is already ${holder.status} ${which}; wait for it to finish before starting another`;
}
