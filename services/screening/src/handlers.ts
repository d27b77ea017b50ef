import { CreateScreeningJobMessage, operations, type ScreeningJob, type ScreeningJobListItem } from "@litrev/contracts";
import { jobExportHandlers, requestOwner, type JobInfra, type JobReader, type JobStore } from "@litrev/jobs";
import { handler, type HandlerEntry } from "@litrev/messaging";
import { admitScreeningJob, type AdmissionDeps } from "./admission";
import { requirePrice } from "@litrev/llm";
import { estimateScreening } from "./estimate";
import { PROMPTS } from "./prompts";

export interface HandlerDeps extends AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  reader: JobReader;
  /** The job's model when the request named none: the service config's, else the spec's default. */
  chooseModel?: (requested: string) => string;
}

/**
 * The screening operations. Polls and active-job queries of running jobs are normally answered by
 * the gateway from its mirror of the live-state bucket; the service answers the rest (terminal
 * jobs and listings from the store of record) through the same reader the job machinery gives
 * every job kind.
 */
export function screeningHandlers(deps: HandlerDeps): HandlerEntry[] {
  return [
    // Papers may be empty over NATS: the gateway stages a large list and sends its reference.
    handler({ ...operations.createScreeningJob, request: CreateScreeningJobMessage }, (request, ctx) =>
      admitScreeningJob(deps, deps.chooseModel ? { ...request, model: deps.chooseModel(request.model) } : request, ctx),
    ),
    // Reads for a client see only its own jobs (the gateway names the client; docs/security.md).
    handler(operations.getScreeningJob, async ({ job_id }, ctx) => (await deps.reader.get(job_id, requestOwner(ctx.header))) as ScreeningJob),
    handler(operations.listScreeningJobs, async ({ limit }, ctx) => (await deps.reader.list(limit, requestOwner(ctx.header))) as ScreeningJobListItem[]),
    handler(operations.activeScreeningJob, async ({ project_id }, ctx) =>
      (await deps.reader.activeForProject(project_id, requestOwner(ctx.header))) as ScreeningJob | null,
    ),
    ...jobExportHandlers("screening", deps.reader, PROMPTS.builtIn),
    // Priced with the model a job of the same request would use.
    handler(operations.estimateScreening, async (request) => {
      const priced = deps.chooseModel ? { ...request, model: deps.chooseModel(request.model) } : request;
      requirePrice(priced.model, deps.aliases?.()); // no estimate from a guessed price
      return estimateScreening(priced, deps.aliases?.(), deps.provider?.());
    }),
  ];
}
