import type { NatsConnection } from "@nats-io/transport-node";
import { DEFAULT_JOB_OWNER, subjects, type JobService, jsonRecord } from "@litrev/contracts";
import { JobData, JobMirror, JobReader, NoJobStore, PartialReader } from "@litrev/jobs/client";
import type { NatsLink } from "@litrev/messaging";
import type { Logger } from "@litrev/telemetry";

export interface LiveJobs {
  mirror: JobMirror;
  /** Builds poll bodies of active jobs (with their finished items) the same way the services do. */
  reader: JobReader;
  /** The service's job data bucket (large job inputs are staged there). */
  data: JobData;
}

/**
 * One mirror of a service's live job state (and a reader of its running jobs' items) per gateway
 * process, opened on first use once NATS is reachable. Until the service has created its buckets,
 * opening fails and is retried on the next request.
 */
export class LiveJobsRegistry {
  readonly #open = new Map<JobService, Promise<LiveJobs>>();
  /** Resolved ones, for the synchronous hot path of polls. */
  readonly #ready = new Map<JobService, LiveJobs>();
  /** Told of every deleted job of an opened service, and (job null) of every reconnect, when deletions may have been missed. */
  onErased: ((service: JobService, jobId: string | null) => void) | undefined;
  /**
   * Told when an owner's stored bytes of an opened service may have freed: a job of theirs ended or
   * was deleted (the owner), or deletions may have been missed across a reconnect (null: anyone's).
   */
  onFreed: ((service: JobService, owner: string | null) => void) | undefined;

  constructor(
    private readonly link: NatsLink,
    private readonly logger: Logger,
  ) {}

  get(service: JobService): Promise<LiveJobs> {
    const nc = this.link.connection(); // a retryable 503 while NATS is down
    let live = this.#open.get(service);
    if (!live) {
      live = (async () => {
        const [mirror, data] = await Promise.all([JobMirror.open(nc, service, this.logger), JobData.open(nc, service)]);
        mirror.onEnded = (state) => this.onFreed?.(service, state.owner ?? DEFAULT_JOB_OWNER);
        this.#listenForErasures(nc, service);
        // The gateway has no store of record: it answers only active jobs itself.
        return { mirror, data, reader: new JobReader(service, mirror, data, new PartialReader(data), new NoJobStore()) };
      })();
      live.then(
        (opened) => this.#ready.set(service, opened),
        () => this.#open.delete(service),
      );
      this.#open.set(service, live);
    }
    return live;
  }

  /**
   * The owning service publishes every job it deletes; this gateway drops what it cached of it. The
   * subscription survives reconnects, but what was published while the connection was down is lost:
   * a reconnect therefore counts as "anything may have been deleted".
   */
  #listenForErasures(nc: NatsConnection, service: JobService): void {
    nc.subscribe(subjects.jobErased(service), {
      callback: (error, msg) => {
        if (error) return;
        try {
          const { job_id: jobId, owner } = jsonRecord(msg.json());
          if (typeof jobId !== "string") return;
          this.onErased?.(service, jobId);
          // A service of an earlier version names no owner: anyone's bytes may have freed.
          this.onFreed?.(service, typeof owner === "string" ? owner : null);
        } catch {
          // Not JSON: nobody but the owning service may publish here.
        }
      },
    });
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type !== "reconnect") continue;
        this.onErased?.(service, null);
        this.onFreed?.(service, null);
      }
    })().catch(() => undefined);
  }

  /** The opened mirror, or undefined before the first open completed (or while NATS is down). */
  ready(service: JobService): LiveJobs | undefined {
    return this.link.connected ? this.#ready.get(service) : undefined;
  }

  async close(): Promise<void> {
    for (const live of this.#open.values()) {
      await live.then((l) => l.mirror.stop()).catch(() => undefined);
    }
  }
}
