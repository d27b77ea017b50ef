import { operations, ServiceError, toScreeningJob, toScreeningJobListItem, type ScreeningJob } from "@litrev/contracts";
import { isActive, storageRead, type JobInfra, type JobStore } from "@litrev/jobs";
import { handler, type HandlerEntry } from "@litrev/messaging";
import { admitScreeningJob, type AdmissionDeps } from "./admission";
import { estimateScreening } from "./estimate";

export interface HandlerDeps extends AdmissionDeps {
  infra: JobInfra;
  store: JobStore;
  /** The job's model when the request named none: the service config's, else the spec's default. */
  chooseModel?: (requested: string) => string;
}

const notFound = () => new ServiceError("not_found", "Job not found", { simple: true });

/**
 * The screening operations. Polls and active-job queries are normally answered by the gateway
 * from its mirror of the live-state bucket; `get-job` here is the storage read it falls back to
 * once a job has left the live registry.
 */
export function screeningHandlers(deps: HandlerDeps): HandlerEntry[] {
  return [
    handler(operations.createScreeningJob, (request, ctx) =>
      admitScreeningJob(deps, deps.chooseModel ? { ...request, model: deps.chooseModel(request.model) } : request, ctx),
    ),
    handler(operations.getScreeningJob, async ({ job_id }) => {
      const stored = await storageRead(deps.store, () => deps.store.getJob(job_id));
      if (!stored) throw notFound();
      const completed = stored.status === "completed";
      const results = completed ? await storageRead(deps.store, () => deps.store.getItems(job_id)) : [];
      const clusters = (stored.result?.clusters as unknown[] | undefined) ?? [];
      return toScreeningJob(stored, completed ? { results, clusters } : null);
    }),
    handler(operations.listScreeningJobs, async ({ limit }) => {
      if (!deps.store.persistent) return [];
      const jobs = await storageRead(deps.store, () => deps.store.listJobs(limit));
      return jobs.map(toScreeningJobListItem);
    }),
    handler(operations.activeScreeningJob, async ({ project_id }): Promise<ScreeningJob | null> => {
      const lock = await deps.infra.registry.lockHolder(project_id);
      if (!lock) return null;
      const live = await deps.infra.registry.get(lock.lock.job_id);
      return live && isActive(live.state) ? toScreeningJob(live.state) : null;
    }),
    // Priced with the model a job of the same request would use.
    handler(operations.estimateScreening, async (request) =>
      estimateScreening(deps.chooseModel ? { ...request, model: deps.chooseModel(request.model) } : request),
    ),
  ];
}
