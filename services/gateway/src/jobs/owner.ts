import type { FastifyRequest } from "fastify";
import { DEFAULT_JOB_OWNER } from "@litrev/contracts";

/** The owner id of the request's service key: the client its jobs belong to (docs/security.md). */
export function ownerOf(request: FastifyRequest): string {
  return request.principal?.owner ?? DEFAULT_JOB_OWNER;
}
