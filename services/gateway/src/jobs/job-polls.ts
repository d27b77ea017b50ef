import type { FastifyReply } from "fastify";
import { Readable } from "node:stream";
import { headers, isJobId, isTerminalStatus, operations, ServiceError, type JobService, type JobStatus, type Operation } from "@litrev/contracts";
import { FinishedBodies, finishedPart, isActive, ownedBy, type FinishedBody, type MirrorEntry } from "@litrev/jobs/client";
import { callOperationStreamed } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import type { LiveJobs, LiveJobsRegistry } from "./live-jobs";
import { PartCache } from "./part-cache";

/**
 * A job's poll body as this gateway answers it. `finished` says whether the job has ended, from
 * the state or stored head it was read from (never from the JSON). A large finished body comes as
 * parts to stream, so no process holds it whole.
 */
export type PollBody = { finished: boolean; body: string | Uint8Array } | { finished: true; parts: () => AsyncIterable<Uint8Array> };

const GET_OPERATION: Record<JobService, Operation> = { screening: operations.getScreeningJob, indexer: operations.getIndexerJob };

const jobNotFound = () => new ServiceError("not_found", "Job not found", { simple: true });

/**
 * The one reader of job polls in the gateway, shared by the poll routes, the event streams (their
 * first answer and their end event) and the validation route. In order:
 * - a finished body this gateway holds (memory, no I/O: a finished job never changes);
 * - a live entry of the mirror: an active job's body, serialised once per state revision;
 * - not in the mirror: the finished body from the job data bucket, read once and cached, else the
 *   state read directly;
 * - a terminal live entry: its first poll goes to the owning service, which releases the entry
 *   when the store holds the job (a write the gateway may not make) and writes the finished body;
 *   a job without a finished body (finished before there were finished bodies, or whose body
 *   expired) asks the service too.
 */
export class JobPolls {
  readonly #bodies = new WeakMap<MirrorEntry, string>();
  readonly #finished = new FinishedBodies();
  /** Parts of large finished bodies, shared by the polls that stream one body at about the same time. */
  readonly #parts = new PartCache();
  /** Service reads in progress by service, job and owner: concurrent polls share one request. */
  readonly #asking = new Map<string, Promise<PollBody>>();

  constructor(
    private readonly deps: GatewayDeps,
    private readonly live: LiveJobsRegistry,
  ) {}

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
    const cached = this.#finished.peek(service, jobId);
    if (cached) {
      if (!ownedBy(cached, owner)) throw jobNotFound();
      return this.#finishedBody(cached, owner, service, cached.body ? undefined : (this.live.ready(service) ?? (await this.live.get(service))));
    }
    const jobs = await this.opened(service);
    let entry = jobs?.mirror.get(jobId) ?? null;
    if (jobs && !entry) {
      // Not in the mirror: mostly a released (finished) job. Its finished body first, so that a
      // finished job costs no read of its state; else the state, read directly (a job created a
      // moment ago through another gateway, or a copy not trusted after a stall).
      const finished = await this.#finished.fetch(service, jobId, jobs.data);
      if (finished) return this.#finishedBody(finished, owner, service, jobs);
      entry = await jobs.mirror.fetch(jobId);
    }
    // Another client's job is not found (and its terminal state is not released by this poll).
    if (entry && !ownedBy(entry.state, owner)) throw jobNotFound();
    if (jobs && entry && isActive(entry.state)) return { finished: false, body: await this.active(jobs, entry) };
    return this.#ask(service, jobId, owner, requestId);
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

  /** Sends a poll body as the response (JSON, streamed part by part when large). */
  static send(reply: FastifyReply, poll: PollBody): FastifyReply {
    reply.type("application/json; charset=utf-8");
    if ("parts" in poll) return reply.send(Readable.from(poll.parts()));
    return reply.send(typeof poll.body === "string" ? poll.body : Buffer.from(poll.body.buffer, poll.body.byteOffset, poll.body.length));
  }

  /** The whole body as text (event streams and the validation route need it as one value). */
  static async text(poll: PollBody): Promise<string> {
    if (!("parts" in poll)) return typeof poll.body === "string" ? poll.body : Buffer.from(poll.body).toString("utf8");
    const parts: Buffer[] = [];
    for await (const part of poll.parts()) parts.push(Buffer.from(part));
    return Buffer.concat(parts).toString("utf8");
  }

  /** A finished body for `owner`; its parts are read through `jobs` (resolved first: NATS down is a 503 before the answer starts). */
  #finishedBody(finished: FinishedBody, owner: string, service: JobService, jobs: LiveJobs | undefined): PollBody {
    if (!ownedBy(finished, owner)) throw jobNotFound();
    if (finished.body) return { finished: true, body: finished.body };
    const data = jobs!.data;
    const ref = { name: `${service}:finished/${finished.jobId}`, parts: finished.parts, bytes: finished.bytes };
    return { finished: true, parts: () => this.#parts.stream(ref, (n) => finishedPart(data, finished.jobId, n)) };
  }

  /** The owning service answers (a terminal job's first poll, or a job without a finished body). */
  #ask(service: JobService, jobId: string, owner: string, requestId: string): Promise<PollBody> {
    // Per owner too: the service answers another client's job with 404.
    const key = `${service}/${jobId}/${owner}`;
    let read = this.#asking.get(key);
    if (!read) {
      read = callOperationStreamed(this.deps.link, GET_OPERATION[service], { job_id: jobId }, { requestId, timeoutMs: this.deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: owner } }).then(
        (reply): PollBody => {
          // Parts: only a terminal stored body is streamed.
          if (!("data" in reply)) return { finished: true, parts: () => this.#parts.stream(reply.parts, reply.readPart) };
          const status = (reply.data as { status: JobStatus }).status;
          return { finished: isTerminalStatus(status), body: JSON.stringify(reply.data) };
        },
      );
      this.#asking.set(key, read);
      const forget = () => this.#asking.delete(key);
      read.then(forget, forget);
    }
    return read;
  }
}
