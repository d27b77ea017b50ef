import { randomUUID } from "node:crypto";
import { PassThrough, type Writable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { JOB_EVENT, JobIdParams, ServiceError, TERMINAL_EVENT_ID, toJobStateEvent, type JobService } from "@litrev/contracts";
import { isActive, type MirrorEntry } from "@litrev/jobs/client";
import type { Logger } from "@litrev/telemetry";
import type { GatewayDeps } from "../deps";
import { toHttp } from "../http-errors";
import { JobPolls, type PollBody } from "./job-polls";
import { ownerOf } from "./owner";
import type { ZodApp } from "../validation";
import type { LiveJobs, LiveJobsRegistry } from "./live-jobs";
import { parseLastEventId, SSE_HEARTBEAT, sseFrame, sseRetry } from "./sse";

/** How long a client waits before reconnecting (sent as `retry:` at the start of every stream). */
const RECONNECT_MS = 2_000;
/**
 * A client that lets this much unsent data pile up is disconnected: it reconnects with
 * Last-Event-ID and resumes from the newest state, so a slow reader never grows the gateway's memory.
 */
const MAX_BUFFERED_BYTES = 1 << 20;
/** A poll of the job for one owner, by the gateway's one poll reader (its errors are thrown). */
export type PollJob = (service: JobService, jobId: string, owner: string) => Promise<PollBody>;

interface Stream {
  /** The response body (piped to the socket by fastify, so the request is logged, measured and traced when it ends). */
  res: Writable;
  /** Revision of the last state event this client has (from Last-Event-ID, then from what was sent). */
  lastRevision: number;
  /** The caller's owner id (from its key), for the poll that reads the finished job. */
  owner: string;
}

/** Every open stream of one job on this gateway: one mirror listener and one serialised event per state, however many streams. */
class JobFeed {
  readonly streams = new Set<Stream>();
  /** Newest revision seen, and the newest state event built (heartbeat-only writes build none). */
  revision = 0;
  json: string | undefined;
  frame: { revision: number; bytes: Buffer } | undefined;
  ending = false;
  stopListening: () => void = () => undefined;

  constructor(
    readonly key: string,
    readonly service: JobService,
    readonly jobId: string,
    readonly jobs: LiveJobs,
  ) {}
}

/**
 * The job event streams of one gateway: each job's streams share one listener on the gateway's
 * live-state mirror (itself one KV watch per job kind), so a listener adds no NATS traffic. The
 * finished job is read once per job through the poll reader and the same bytes go to every stream.
 */
export class JobEventStreams {
  #open = 0;
  #closed = false;
  readonly #feeds = new Map<string, JobFeed>();
  readonly #streams = new Set<Stream>();
  readonly #ticker: NodeJS.Timeout;

  constructor(
    private readonly options: { maxStreams: number; heartbeatMs: number; logger: Logger; poll: PollJob },
  ) {
    this.#ticker = setInterval(() => this.#tick(), options.heartbeatMs);
    this.#ticker.unref();
  }

  /** Streams open or being opened. */
  get open(): number {
    return this.#open;
  }

  /** The gateway is shutting down: it opens no stream. */
  get closing(): boolean {
    return this.#closed;
  }

  /** Takes a slot for one stream; false at the limit or once closing. Every true is matched by one release. */
  reserve(): boolean {
    if (this.#closed || this.#open >= this.options.maxStreams) return false;
    this.#open++;
    return true;
  }

  release(): void {
    this.#open--;
  }

  /** Streams the job's state changes into `res`, the response body, until the job ends or the client goes. */
  follow(service: JobService, jobs: LiveJobs, jobId: string, res: Writable, lastRevision: number, owner: string): void {
    const stream: Stream = { res, lastRevision, owner };
    const feed = this.#feedOf(service, jobs, jobId);
    feed.streams.add(stream);
    this.#streams.add(stream);
    res.once("close", () => this.#detach(feed, stream));
    if (res.destroyed) return this.#detach(feed, stream); // the client left while the stream was being opened
    if (this.#closed) return void res.end();
    this.#sendState(feed, stream);
  }

  /** Ends every stream (their clients reconnect elsewhere with Last-Event-ID) and refuses new ones. */
  closeAll(): void {
    this.#closed = true;
    clearInterval(this.#ticker);
    for (const feed of this.#feeds.values()) feed.stopListening();
    for (const stream of [...this.#streams]) stream.res.end();
  }

  #feedOf(service: JobService, jobs: LiveJobs, jobId: string): JobFeed {
    const key = `${service}/${jobId}`;
    const known = this.#feeds.get(key);
    if (known) return known;
    const feed = new JobFeed(key, service, jobId, jobs);
    this.#feeds.set(key, feed);
    feed.stopListening = jobs.mirror.listen(jobId, (entry) => this.#update(feed, entry));
    void this.#refresh(feed);
    return feed;
  }

  /** The current copy (a direct read when it is missing or stale); news reaches the feed through its listener too. */
  async #refresh(feed: JobFeed): Promise<void> {
    try {
      const entry = feed.jobs.mirror.get(feed.jobId) ?? (await feed.jobs.mirror.read(feed.jobId));
      this.#update(feed, entry);
    } catch (error) {
      // NATS is down: the streams stay open (heartbeats go on) and the next tick reads again.
      this.options.logger.debug({ err: error, jobId: feed.jobId }, "job event stream could not read the job's state");
    }
  }

  #update(feed: JobFeed, entry: MirrorEntry | null): void {
    if (feed.ending) return;
    if (!entry) return void this.#finish(feed);
    if (entry.revision <= feed.revision) return;
    feed.revision = entry.revision;
    if (!isActive(entry.state)) return void this.#finish(feed);
    const json = JSON.stringify(toJobStateEvent(entry.state));
    if (json === feed.json) return; // a heartbeat write: nothing a client sees changed
    feed.json = json;
    feed.frame = { revision: entry.revision, bytes: Buffer.from(sseFrame({ event: JOB_EVENT.state, id: String(entry.revision), data: json })) };
    for (const stream of feed.streams) this.#sendState(feed, stream);
  }

  #sendState(feed: JobFeed, stream: Stream): void {
    if (!feed.frame || feed.frame.revision <= stream.lastRevision) return;
    stream.lastRevision = feed.frame.revision;
    this.#write(stream, feed.frame.bytes);
  }

  /** The job ended (or its live state is gone): one poll reads it as every client would, and every stream gets that answer. */
  async #finish(feed: JobFeed): Promise<void> {
    feed.ending = true;
    feed.stopListening();
    const first = feed.streams.values().next().value;
    let poll: PollBody | null = null;
    let failure: Buffer | null = null;
    if (first) {
      try {
        poll = await this.options.poll(feed.service, feed.jobId, first.owner);
      } catch (error) {
        failure = Buffer.from(sseFrame({ event: JOB_EVENT.error, data: JSON.stringify(toHttp(ServiceError.from(error)).body) }));
      }
    }
    if (this.#feeds.get(feed.key) === feed) this.#feeds.delete(feed.key);
    for (const stream of feed.streams) {
      // Not finished: the poll found the job active again (its live state was replaced); the client reconnects and resumes.
      if (poll?.finished && !stream.res.writableEnded) void endEvent(stream.res, poll, this.options.logger);
      else {
        if (failure && !stream.res.writableEnded) stream.res.write(failure);
        stream.res.end();
      }
    }
  }

  #detach(feed: JobFeed, stream: Stream): void {
    if (!this.#streams.delete(stream)) return;
    feed.streams.delete(stream);
    this.release();
    if (feed.streams.size === 0 && !feed.ending) {
      feed.stopListening();
      if (this.#feeds.get(feed.key) === feed) this.#feeds.delete(feed.key);
    }
  }

  #write(stream: Stream, bytes: Buffer): void {
    const { res } = stream;
    if (res.writableEnded || res.destroyed) return;
    if (backlog(res) > MAX_BUFFERED_BYTES) return void res.destroy();
    res.write(bytes);
  }

  #tick(): void {
    for (const stream of this.#streams) this.#write(stream, SSE_HEARTBEAT);
    // A copy the watch has not confirmed for a while is read again: once per job, not per stream.
    for (const feed of this.#feeds.values()) {
      if (!feed.ending && !feed.jobs.mirror.get(feed.jobId)) void this.#refresh(feed);
    }
  }
}

/** Bytes written to a stream and not yet taken by the socket. */
function backlog(res: Writable): number {
  return res.writableLength + (res instanceof PassThrough ? res.readableLength : 0);
}

/** The end event's lines before its data (the poll body is one line of JSON: it holds no raw line break). */
const END_EVENT_HEAD = Buffer.from(`event: ${JOB_EVENT.end}\nid: ${TERMINAL_EVENT_ID}\ndata: `);
const END_EVENT_TAIL = Buffer.from("\n\n");

/**
 * Writes the end event — the finished job's poll body, streamed from its artifact piece by piece
 * at the pace the client reads — and ends the stream. A client that leaves stops the read.
 */
async function endEvent(res: Writable, poll: PollBody, logger: Logger): Promise<void> {
  try {
    res.write(END_EVENT_HEAD);
    for await (const piece of JobPolls.pieces(poll)) {
      if (res.destroyed) return;
      if (!res.write(piece)) await drained(res);
    }
    res.end(END_EVENT_TAIL);
  } catch (error) {
    // The artifact could not be read to its end: the client sees a cut stream and reconnects.
    logger.warn({ err: error }, "job event stream could not send the finished job");
    res.destroy();
  }
}

/** Resolves once `res` has room again, or once it closed. */
function drained(res: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}

const EVENT_STREAM_DESCRIPTION =
  "Server-sent events: `state` events (id: the state's revision; data: status, stage, progress, stage timings, usage so far) " +
  "as the job changes, then one `end` event (id: `end`) whose data is exactly the poll response of the finished job, and the stream closes. " +
  "A comment line is sent at an interval. Reconnect with `Last-Event-ID` to resume without repeats; an `error` event " +
  "(data: the poll's error body) ends a stream that could not read the finished job. Beyond MAX_EVENT_STREAMS open streams a gateway answers 503 (retryable).";

/**
 * `GET /v1/{screening|indexer}/jobs/{job_id}/events` (and without `/v1`): the job's progress as
 * server-sent events, behind the same key as every route. The first answer and the last event come
 * from the poll reader the poll route uses (same owner, same 404, same body as a poll), so a stream
 * shows nothing a poll would not; in between, state events come from this gateway's live-state mirror.
 */
export function jobEventRoutes(app: ZodApp, deps: GatewayDeps, live: LiveJobsRegistry, polls: JobPolls): (service: JobService) => void {
  const poll: PollJob = (service, jobId, owner) => polls.read(service, jobId, owner, randomUUID());
  const streams = new JobEventStreams({
    maxStreams: deps.env.MAX_EVENT_STREAMS,
    heartbeatMs: deps.env.EVENT_HEARTBEAT_MS,
    logger: deps.logger,
    poll,
  });
  // Before the server waits for its connections to end (onClose would run after): open streams would hold it.
  app.addHook("preClose", (done) => {
    streams.closeAll();
    done();
  });

  const handler = (service: JobService) => async (request: FastifyRequest<{ Params: JobIdParams }>, reply: FastifyReply) => {
    if (!streams.reserve()) {
      const { status, body } = toHttp(
        new ServiceError(
          "service_unavailable",
          streams.closing
            ? "This gateway is shutting down; reconnect (another replica will serve the stream)"
            : `This gateway already serves its limit of ${deps.env.MAX_EVENT_STREAMS} job event streams (MAX_EVENT_STREAMS); poll the job, or retry later`,
        ),
      );
      return reply.status(status).header("retry-after", "5").send(body);
    }
    let handedOver = false;
    try {
      const last = parseLastEventId(request.headers["last-event-id"]);
      if (last.kind === "invalid") {
        throw new ServiceError("validation", "Request validation failed", {
          issues: [{ type: "value_error", loc: ["header", "last-event-id"], msg: "Last-Event-ID must be an event id this stream sent (a number, or end)" }],
        });
      }
      // The client saw the end event already: HTTP 204 tells an EventSource to stop reconnecting.
      if (last.kind === "end") return reply.status(204).send();

      const { job_id } = request.params;
      const owner = ownerOf(request);
      // Errors (404 for an unknown or another client's job) are answered as the poll's.
      const first = await polls.read(service, job_id, owner, request.id);
      if (first.finished) {
        // The end event streams the whole finished job: a heavy read of its owner, like an export.
        await request.countHeavyRead(reply);
        await endEvent(openStream(request, reply), first, deps.logger);
        return reply;
      }
      const jobs = live.ready(service) ?? (await live.get(service));
      const body = openStream(request, reply);
      handedOver = true;
      streams.follow(service, jobs, job_id, body, last.kind === "revision" ? last.revision : 0, owner);
      return reply;
    } finally {
      if (!handedOver) streams.release();
    }
  };

  return (service) => {
    app.get(
      `/v1/${service}/jobs/:job_id/events`,
      {
        schema: {
          params: JobIdParams,
          response: {
            200: { description: EVENT_STREAM_DESCRIPTION, content: { "text/event-stream": { schema: z.string() } } },
            204: z.null().describe("The stream had ended already (Last-Event-ID was `end`): nothing more will come"),
          },
        },
      },
      handler(service),
    );
  };
}

/** Starts the event-stream response; events are written to the returned body. */
function openStream(request: FastifyRequest, reply: FastifyReply): PassThrough {
  const body = new PassThrough();
  body.write(sseRetry(RECONNECT_MS));
  void reply
    .headers({
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no", // proxies that buffer responses (nginx) pass events on at once
      "x-request-id": request.id,
    })
    .send(body);
  return body;
}
