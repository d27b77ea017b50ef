import { jobDataObjects, ServiceError, type IndexerJob, type IndexerJobListItem, type LiveJobState } from "@litrev/contracts";
import { isActive, storageRead, type JobInfra, type JobStore, type StoredJob } from "@litrev/jobs";
import { EXTRACTION_STAGE, type IndexerJobResult, type IndexerLiveExtra, type RecordCheckpoint } from "./job-input";
import { toIndexerJob, toListItem } from "./views";

type JobView = LiveJobState | StoredJob;

/**
 * Polls, listings and the active-job query. Live state comes from the job-state bucket (so a job
 * is found on any replica right after creation), falling back to MongoDB; finished records come
 * from the checkpoints while the job runs and from its result object once it has ended.
 * Reading never changes stored state.
 */
export class IndexerJobReader {
  constructor(
    private readonly infra: JobInfra,
    private readonly store: JobStore,
  ) {}

  async get(jobId: string): Promise<IndexerJob> {
    const state = await this.#state(jobId);
    if (!state) throw new ServiceError("not_found", "Job not found", { simple: true });
    return this.#view(state);
  }

  /**
   * Newest first, from MongoDB. Without persistence the list is empty, as the spec has it for
   * screening listings (a scan of the live bucket is no substitute: it never settles while
   * running jobs keep writing progress).
   */
  async list(limit: number): Promise<IndexerJobListItem[]> {
    if (!this.store.persistent) return [];
    return (await storageRead(this.store, () => this.store.listJobs(limit))).map(toListItem);
  }

  /**
   * The project's pending or running job, or null: the job holding the project's pointer in the
   * live bucket (taken at admission by the first active job of the project, released when it
   * ends), else, with persistence, the newest active job stored for the project.
   */
  async active(projectId: number): Promise<IndexerJob | null> {
    const holder = await this.infra.registry.lockHolder(projectId);
    const pointed = holder?.lock.job_id ? await this.infra.registry.get(holder.lock.job_id) : null;
    if (pointed && isActive(pointed.state)) return this.#view(pointed.state);
    if (!this.store.persistent) return null;
    const candidates: JobView[] = [];
    for (const stored of await storageRead(this.store, () => this.store.activeJobs(projectId))) {
      // The live state is fresher than the stored row (which is saved at milestones).
      candidates.push((await this.infra.registry.get(stored.job_id))?.state ?? stored);
    }
    const active = candidates.filter(isActive).sort((a, b) => (a.created_at < b.created_at ? 1 : -1))[0];
    return active ? this.#view(active) : null;
  }

  async #state(jobId: string): Promise<JobView | null> {
    return (await this.infra.registry.get(jobId))?.state ?? (this.store.persistent ? await storageRead(this.store, () => this.store.getJob(jobId)) : null);
  }

  async #view(state: JobView): Promise<IndexerJob> {
    if (state.status === "pending") return toIndexerJob(state, { items: [], errors: [] });
    if (state.status === "running") {
      const partial = await this.#checkpointed(state.job_id);
      const reported = (state.extra as IndexerLiveExtra).records_done ?? 0;
      // Fewer checkpoints than reported means the job ended (and purged them) meanwhile.
      if (partial.items.length >= reported) return toIndexerJob(state, partial);
      const now = await this.#state(state.job_id);
      if (now && !isActive(now)) return this.#view(now);
      return toIndexerJob(state, partial);
    }
    return toIndexerJob(state, await this.#ended(state.job_id));
  }

  async #checkpointed(jobId: string): Promise<{ items: unknown[]; errors: string[] }> {
    const units = await this.infra.checkpoints.load<RecordCheckpoint>(jobId, EXTRACTION_STAGE);
    const ordered = [...units.entries()].sort((a, b) => Number(a[0]) - Number(b[0])).map(([, c]) => c);
    return { items: ordered.map((c) => c.record), errors: ordered.flatMap((c) => (c.error ? [c.error] : [])) };
  }

  async #ended(jobId: string): Promise<{ items: unknown[]; errors: string[] }> {
    const result = await this.infra.data.getJson<IndexerJobResult>(jobDataObjects.result(jobId));
    if (result) return { items: result.items, errors: result.result.errors ?? [] };
    if (!this.store.persistent) return { items: [], errors: [] };
    const stored = await storageRead(this.store, () => this.store.getJob(jobId));
    const errors = (stored?.result as { errors?: string[] } | null)?.errors ?? [];
    return { items: await storageRead(this.store, () => this.store.getItems(jobId)), errors };
  }
}
