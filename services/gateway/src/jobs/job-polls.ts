import type { FastifyReply } from "fastify";
import { Readable } from "node:stream";
import { headers, isJobId, isTerminalStatus, jobKind, ServiceError, JobStatus, type JobService, jobNotFound, jsonRecord } from "@litrev/contracts";
import { FinishedArtifacts, isActive, ownedBy, type FinishedArtifact, type FinishedJob, type JobData, type MirrorEntry } from "@litrev/jobs/client";
import { callOperation } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import type { LiveJobs, LiveJobsRegistry } from "./live-jobs";

/** A finished job as this gateway reads it: its artifact, and the bucket its chunks are read from. */
export interface FinishedRead {
  artifact: FinishedArtifact;
  data: JobData;
  /** The poll body's bytes, piece by piece (a large body's chunks shared with concurrent polls of the job). */
  pieces: () => AsyncIterable<Uint8Array>;
  /** The job as exports, reports and validations read it (its lists' chunks shared with the other reads of the job). */
  job: () => FinishedJob;
}

/**
 * A job's poll as this gateway answers it: an active job's body (with its status), or a finished
 * job's artifact (whether it has ended comes from the state or the artifact's head, never from
 * the JSON). A finished body is streamed from the artifact's chunks, so no process holds it whole.
 */
export type PollBody = { finished: false; status: JobStatus; body: string } | ({ finished: true } & FinishedRead);


/** How the gateway asks the owning service for a job, for one owner. */
interface ServiceReadOptions {
  requestId: string;
  timeoutMs: number;
  headers: Record<string, string>;
}

/** A finished poll body larger than this counts as a heavy read (docs/limits.md). */
const LARGE_POLL_BYTES = 1024 * 1024;


/**
 * The one reader of jobs in the gateway, shared by the poll routes, the event streams (their first
 * answer and their end event), the exports, the reports and the validation route. In order:
 * - an artifact this gateway holds (memory, no I/O: an artifact never changes);
 * - a live entry of the mirror: an active job's body, serialised once per state revision;
 * - the finished job's artifact from the job data bucket (written by the worker that ended the
 *   job, before its state turned terminal), read once and cached — no request to the service;
 * - no artifact: the owning service writes it from its store of record (`write-artifact`: a job
 *   that ended before artifacts existed, failed as an orphan, or outlived the artifact's max age),
 *   then it is read as above.
 */
export class JobPolls {
  readonly #bodies = new WeakMap<MirrorEntry, string>();
  readonly #artifacts = new FinishedArtifacts();
  /** Service requests in progress by service, job and owner: concurrent reads share one request. */
  readonly #asking = new Map<string, Promise<PollBody>>();

  constructor(
    private readonly deps: GatewayDeps,
    private readonly live: LiveJobsRegistry,
  ) {
    live.onErased = (service, jobId) => (jobId === null ? this.#artifacts.clear() : this.#artifacts.forget(service, jobId));
  }

  /** A job this gateway deleted: its cached artifact stops answering at once (other gateways hear it from the service). */
  forget(service: JobService, jobId: string): void {
    this.#artifacts.forget(service, jobId);
  }

  /** The mirror, or null when it cannot be opened yet (no service has created the buckets): the service answers. */
  async opened(service: JobService): Promise<LiveJobs | null> {
    const ready = this.live.ready(service);
    if (ready) return ready;
    try {
      return await this.live.get(service);
    } catch (error) {
      if (error instanceof ServiceError) throw error; // NATS down: a retryable 503
      this.deps.logger.debug({ err: error }, "job-state mirror unavailable; asking the service");
      return null;
    }
  }

  /** A poll of `jobId` for `owner`: another owner's job is not found, as an unknown one. */
  async read(service: JobService, jobId: string, owner: string, requestId: string): Promise<PollBody> {
    if (!isJobId(jobId)) throw jobNotFound();
    const cached = this.#artifacts.peek(service, jobId);
    const ready = cached && this.live.ready(service);
    if (cached && ready) return this.#finished(service, cached, owner, ready.data, requestId);
    const jobs = await this.opened(service);
    if (!jobs) return this.#ask(service, jobId, owner, requestId, null);
    let entry = jobs.mirror.get(jobId) ?? null;
    if (entry && !ownedBy(entry.state, owner)) throw jobNotFound();
    if (entry && isActive(entry.state)) return { finished: false, status: entry.state.status, body: await this.active(jobs, entry) };
    // A copy this mirror does not hold (a job created a moment ago through another gateway, one
    // released, or a copy not trusted after a stall): the state first, read directly. The worker
    // writes the artifact before it turns the state terminal, so in between (longer through a NATS
    // outage) the job must still read as active, as the active-job route and the 409 see it; only
    // then is its artifact read and cached (a cached artifact's state has ended for good).
    entry ??= await jobs.mirror.fetch(jobId);
    if (entry && !ownedBy(entry.state, owner)) throw jobNotFound();
    if (entry && isActive(entry.state)) return { finished: false, status: entry.state.status, body: await this.active(jobs, entry) };
    const artifact = await this.#artifacts.fetch(service, jobId, jobs.data);
    if (artifact) return this.#finished(service, artifact, owner, jobs.data, requestId);
    return this.#ask(service, jobId, owner, requestId, jobs);
  }

  /** A finished job for exports, reports and validation: a job still active is a 409, as its export would be. */
  async finished(service: JobService, jobId: string, owner: string, requestId: string): Promise<FinishedRead> {
    const poll = await this.read(service, jobId, owner, requestId);
    if (poll.finished) return poll;
    if (isTerminalStatus(poll.status)) throw new ServiceError("conflict", `Job ${jobId} has ${poll.status} without a store of record: its results were answered once, by this poll`, { simple: true });
    throw new ServiceError("conflict", `Job ${jobId} is still ${poll.status}: its export and report are available once it has finished`, { simple: true });
  }

  /** An active job's body, built once per state revision (the same the services build). */
  active(jobs: LiveJobs, entry: MirrorEntry): string | Promise<string> {
    const known = this.#bodies.get(entry);
    if (known !== undefined) return known;
    return jobs.reader.active(entry).then((view) => {
      const built = JSON.stringify(view);
      this.#bodies.set(entry, built);
      return built;
    });
  }

  /** Sends a poll body as the response (JSON; a large finished body streamed chunk by chunk). */
  /** A finished body over 1 MiB (streamed from its chunks, or held whole just past the size kept whole): a heavy read. */
  static isLarge(poll: PollBody): boolean {
    return poll.finished && (poll.artifact.body?.length ?? Infinity) > LARGE_POLL_BYTES;
  }

  static send(reply: FastifyReply, poll: PollBody): FastifyReply {
    reply.type("application/json; charset=utf-8");
    if (!poll.finished) return reply.send(poll.body);
    if (poll.artifact.body) return reply.send(poll.artifact.body);
    // Byte mode with a tiny high-water mark: one chunk (about 1 MB) read ahead of the socket.
    return reply.send(Readable.from(poll.pieces(), { objectMode: false, highWaterMark: 1 }));
  }

  /** The body's bytes, piece by piece (a small or active body is one piece). */
  static async *pieces(poll: PollBody): AsyncGenerator<Uint8Array> {
    if (!poll.finished) return yield Buffer.from(poll.body);
    if (poll.artifact.body) return yield poll.artifact.body;
    yield* poll.pieces();
  }

  #finished(service: JobService, artifact: FinishedArtifact, owner: string, data: JobData, requestId: string): PollBody | Promise<PollBody> {
    if (!ownedBy(artifact.head, owner)) throw jobNotFound();
    // A job kept without a store of record is answered once, by the service, which then erases it.
    if (artifact.head.persistent === false) return this.#once(service, artifact.jobId, owner, requestId);
    return { finished: true, artifact, data, pieces: () => this.#artifacts.pollPieces(service, artifact, data), job: () => this.#artifacts.job(service, artifact, data) };
  }

  /** The one poll a job kept without a store of record answers: through its service, which erases it (later: 404). */
  #once(service: JobService, jobId: string, owner: string, requestId: string): Promise<PollBody & { finished: false }> {
    return this.#servicePoll(service, jobId, this.#options(owner, requestId));
  }

  /** The owning service's answer to a poll, for the owner the options name. */
  async #servicePoll(service: JobService, jobId: string, options: ServiceReadOptions): Promise<PollBody & { finished: false }> {
    const data = await callOperation(this.deps.link, jobKind(service).operations.get, { job_id: jobId }, options);
    // Every kind's poll body carries the job's status (the service's reply was parsed with the kind's schema).
    return { finished: false, status: JobStatus.parse(jsonRecord(data).status), body: JSON.stringify(data) };
  }

  #options(owner: string, requestId: string): ServiceReadOptions {
    return { requestId, timeoutMs: this.deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: owner } };
  }

  /**
   * The owning service writes the artifact of a finished job that has none, then it is read from
   * the bucket; without a bucket to read (no service has created it yet) the service answers the poll.
   */
  #ask(service: JobService, jobId: string, owner: string, requestId: string, jobs: LiveJobs | null): Promise<PollBody> {
    // Per owner too: the service answers another client's job with 404.
    const key = `${service}/${jobId}/${owner}`;
    let read = this.#asking.get(key);
    if (!read) {
      const options = this.#options(owner, requestId);
      read = (async (): Promise<PollBody> => {
        if (jobs) {
          const written = await callOperation(this.deps.link, jobKind(service).operations.artifact, { job_id: jobId }, options).then(
            () => true,
            (error: unknown) => {
              // Active after all (its state was replaced meanwhile): the service answers the poll.
              if (error instanceof ServiceError && error.category === "conflict") return false;
              throw error;
            },
          );
          const artifact = written ? await this.#artifacts.fetch(service, jobId, jobs.data) : null;
          if (artifact) return this.#finished(service, artifact, owner, jobs.data, requestId);
        }
        const poll = await this.#servicePoll(service, jobId, options);
        if (isTerminalStatus(poll.status)) throw new ServiceError("service_unavailable", "The finished job's results could not be read yet; retry shortly");
        return poll;
      })();
      this.#asking.set(key, read);
      const forget = () => this.#asking.delete(key);
      read.then(forget, forget);
    }
    return read;
  }
}
