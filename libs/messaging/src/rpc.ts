import { headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { context } from "@opentelemetry/api";
import { randomUUID } from "node:crypto";
import type { z } from "zod";
import {
  ReplyEnvelope,
  ServiceError,
  headers as headerNames,
  subjects,
  type BackendService,
  parseOrIssues,
  type Operation,
} from "@litrev/contracts";
import { keyBindings, REQUEST_TOKEN_SKEW_MS, type KeySealer } from "./key-sealer";
import type { NatsLink } from "./connection";
import { PayloadStore, SPILL_THRESHOLD_BYTES } from "./payload-store";
import { extractTraceContext, injectTraceContext, SpanKind, withMessagingSpan } from "./trace-context";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Per-request facts that cross the hop beside the body. The provider key is a secret: it crosses
 * only sealed for this one request (see `CallOptions.sealer`) and is opened by the serving side.
 */
export interface CallContext {
  requestId: string;
  providerKey?: string | undefined;
}

export interface CallOptions extends Partial<CallContext> {
  timeoutMs?: number;
  /** Extra NATS headers (names from `headers` in @litrev/contracts). */
  headers?: Record<string, string>;
  /** Seals `providerKey` for this request (subject, request id and body, expiring with the call); required with a key. */
  sealer?: KeySealer | undefined;
  /**
   * The caller no longer wants the answer (its HTTP client disconnected): the call rejects with
   * the signal's reason and the service is told to stop the request's provider calls.
   */
  signal?: AbortSignal;
}

export const DEFAULT_RPC_TIMEOUT_MS = 30_000;

/**
 * Calls a backend operation over NATS request-reply. Always resolves to the operation's parsed
 * response or rejects with a ServiceError: no answer, no responder and a malformed reply each
 * become a clear, classified error.
 */
export async function callOperation<Req extends z.ZodType, Res extends z.ZodType>(
  link: NatsLink,
  operation: Operation<Req, Res>,
  input: z.input<Req>,
  options: CallOptions = {},
): Promise<z.output<Res>> {
  const nc = link.connection();
  const subject = subjects.rpc(operation.service, operation.name);
  const requestId = options.requestId ?? randomUUID();
  const timeout = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;

  return withMessagingSpan(`send ${subject}`, SpanKind.PRODUCER, subject, context.active(), async () => {
    const hdrs = natsHeaders();
    hdrs.set(headerNames.requestId, requestId);
    for (const [name, value] of Object.entries(options.headers ?? {})) hdrs.set(name, value);
    const cancelId = options.signal ? randomUUID() : undefined;
    if (cancelId) hdrs.set(headerNames.cancelId, cancelId);
    injectTraceContext(hdrs);

    let body = encoder.encode(JSON.stringify(input));
    if (options.providerKey) {
      if (!options.sealer) throw new Error("A provider key crosses NATS only sealed: pass a sealer to callOperation");
      // Bound to this subject, request id and body, and expiring with the call.
      const expiresAt = Date.now() + timeout + REQUEST_TOKEN_SKEW_MS;
      hdrs.set(headerNames.sealedProviderKey, options.sealer.seal(options.providerKey, keyBindings.request(subject, requestId, body), expiresAt));
    }
    let parked: { store: PayloadStore; name: string } | undefined;
    if (body.length > SPILL_THRESHOLD_BYTES) {
      // Park only once someone serves the subject: no responder → the usual 503, nothing stored.
      await probeResponders(nc, subject, operation.service, Math.min(timeout, PROBE_TIMEOUT_MS));
      const store = await PayloadStore.for(nc, operation.service);
      let name: string;
      try {
        name = await store.park(body);
      } catch (error) {
        // E.g. the bucket is at its size limit (NATS_QUOTA_PAYLOAD_MB): a retryable 503, as for replies.
        throw new ServiceError("service_unavailable", "The request was too large to send and could not be stored; retry shortly", { cause: error });
      }
      parked = { store, name };
      hdrs.set(headerNames.payloadRef, parked.name);
      body = new Uint8Array();
    }
    let reply: Msg;
    try {
      reply = await untilAborted(nc.request(subject, body, { timeout, headers: hdrs }), options.signal);
    } catch (error) {
      if (cancelId && options.signal?.aborted) {
        nc.publish(subjects.cancel(operation.service), encoder.encode(JSON.stringify({ cancel_id: cancelId })));
        throw options.signal.reason;
      }
      const failure = requestFailure(error, operation.service, timeout);
      // The responder left between probe and request: nobody will take the body. (After a timeout
      // the service may still be reading it; the bucket's max age sweeps it.)
      if (parked && failure.category === "service_unavailable") void parked.store.discard(parked.name).catch(() => undefined);
      throw failure;
    }
    const replyRef = reply.headers?.get(headerNames.payloadRef);
    const replyData = replyRef ? await (await PayloadStore.for(nc, operation.service)).take(replyRef) : reply.data;
    return parseReplyData(operation, replyData);
  });
}

function parseReplyData<Res extends z.ZodType>(operation: Operation<z.ZodType, Res>, replyData: Uint8Array): z.output<Res> {
  const envelope = ReplyEnvelope.safeParse(safeJson(replyData));
  if (!envelope.success) {
    throw new ServiceError("unknown", `The ${operation.service} service sent a malformed reply`);
  }
  if (!envelope.data.ok) throw ServiceError.fromWire(envelope.data.error);
  return checkResponse(operation, envelope.data.data);
}

function checkResponse<Res extends z.ZodType>(operation: Operation<z.ZodType, Res>, data: unknown): z.output<Res> {
  const parsed = operation.response.safeParse(data);
  if (!parsed.success) {
    throw new ServiceError("unknown", `The ${operation.service} service sent a reply that breaks its contract`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** `work`, or a rejection as soon as `signal` fires (the work itself is left to settle unobserved). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Upper bound on the responder probe that precedes a parked (large) request. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Asks whether any instance serves `subject`, with a headers-only request the serving edge answers
 * at once without running a handler. Rejects with the same ServiceError a real request would get.
 */
async function probeResponders(nc: NatsConnection, subject: string, service: BackendService, timeoutMs: number): Promise<void> {
  const hdrs = natsHeaders();
  hdrs.set(headerNames.probe, "1");
  try {
    await nc.request(subject, new Uint8Array(), { timeout: timeoutMs, headers: hdrs });
  } catch (error) {
    throw requestFailure(error, service, timeoutMs);
  }
}

/**
 * Whether an instance of `operation`'s service answers, before a caller stores something large for
 * it (a staged job input): resolves, or rejects with the ServiceError a request would get.
 */
export function probeOperation(link: NatsLink, operation: Operation, timeoutMs = PROBE_TIMEOUT_MS): Promise<void> {
  return probeResponders(link.connection(), subjects.rpc(operation.service, operation.name), operation.service, timeoutMs);
}

function requestFailure(error: unknown, service: BackendService, timeoutMs: number): ServiceError {
  const name = (error as Error)?.name ?? "";
  const isNoResponders =
    typeof (error as { isNoResponders?: () => boolean }).isNoResponders === "function" &&
    (error as { isNoResponders: () => boolean }).isNoResponders();
  if (isNoResponders || name === "NoRespondersError") {
    return new ServiceError("service_unavailable", `The ${service} service is not running (no instance answered); retry shortly`, {
      cause: error,
    });
  }
  if (name === "TimeoutError") {
    return new ServiceError("timeout", `The ${service} service did not answer within ${timeoutMs} ms; retry shortly`, {
      cause: error,
    });
  }
  return new ServiceError("service_unavailable", `The ${service} service could not be reached; retry shortly`, {
    cause: error,
  });
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
}

export interface HandlerContext extends CallContext {
  subject: string;
  /** Fires when the caller cancels the request (its client disconnected): pass it to provider calls. */
  signal: AbortSignal;
  /** A request header by name (names from `headers` in @litrev/contracts). */
  header(name: string): string | undefined;
}

export type OperationHandler<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> = (
  input: z.output<Req>,
  ctx: HandlerContext,
) => Promise<z.input<Res>>;

export interface HandlerEntry {
  operation: Operation;
  handle: OperationHandler;
}

/** Binds a handler to its operation with the types checked against the contract. */
export function handler<Req extends z.ZodType, Res extends z.ZodType>(
  operation: Operation<Req, Res>,
  handle: OperationHandler<Req, Res>,
): HandlerEntry {
  return { operation, handle: handle as unknown as OperationHandler };
}

export interface ServeOptions {
  onError?: (error: unknown, subject: string) => void;
  /**
   * A message this edge refused without running a handler (not JSON, breaking the contract, an
   * unknown operation, no reply subject): someone other than our own callers is publishing here,
   * or a caller runs another contract version. `reason` never quotes the body (it may hold secrets).
   */
  onRejected?: (subject: string, reason: string) => void;
  /**
   * Opens the sealed provider key of operations that call the provider while answering
   * (`operation.providerKey` = `request`); without it such a key is refused.
   */
  sealer?: KeySealer | undefined;
}

/** A service's operations being served. */
export interface ServedOperations {
  /**
   * Stops taking requests (new ones go to other replicas), then waits until every request already
   * taken has been answered: handlers are async, so draining the subscription alone would let the
   * connection close under a handler still working and its caller time out.
   */
  drain(): Promise<void>;
  /** Requests taken and not yet answered. */
  readonly inFlight: number;
}

/**
 * Answers one service's operations as a member of its queue group, so any number of replicas
 * share the load. The request is validated against the contract again at this edge.
 */
export function serveOperations(
  nc: NatsConnection,
  service: BackendService,
  entries: HandlerEntry[],
  options: ServeOptions = {},
): ServedOperations {
  const byName = new Map(entries.map((entry) => [entry.operation.name, entry]));
  const prefix = subjects.rpc(service, "");
  const pending = new Set<Promise<void>>();
  const cancellable = new Map<string, AbortController>();
  const cancellations = nc.subscribe(subjects.cancel(service), {
    callback: (err, msg) => {
      if (err) return;
      const id = (safeJson(msg.data) as { cancel_id?: unknown } | undefined)?.cancel_id;
      if (typeof id === "string") cancellable.get(id)?.abort(new RequestCancelledError());
    },
  });
  const subscription = nc.subscribe(subjects.rpcWildcard(service), {
    queue: subjects.queueGroup(service),
    callback: (err, msg) => {
      if (err) {
        options.onError?.(err, subjects.rpcWildcard(service));
        return;
      }
      if (!msg.reply) {
        // A request nobody waits for: running it would do work (e.g. admit a job) no one learns about.
        options.onRejected?.(msg.subject, "no reply subject; ignored");
        return;
      }
      if (msg.headers?.get(headerNames.probe)) {
        msg.respond(new Uint8Array()); // "someone is here": a caller checks before parking a large body
        return;
      }
      const entry = byName.get(msg.subject.slice(prefix.length));
      // respond() catches handler errors itself; what remains (e.g. replying on a closed connection) is reported.
      const cancelId = msg.headers?.get(headerNames.cancelId) || undefined;
      const controller = new AbortController();
      if (cancelId) cancellable.set(cancelId, controller);
      const answer = respond(nc, service, msg, entry, options, controller.signal).catch((error: unknown) => options.onError?.(error, msg.subject));
      pending.add(answer);
      void answer.finally(() => {
        pending.delete(answer);
        if (cancelId) cancellable.delete(cancelId);
      });
    },
  });
  return {
    get inFlight() {
      return pending.size;
    },
    async drain() {
      await subscription.drain();
      cancellations.unsubscribe();
      await Promise.allSettled([...pending]);
    },
  };
}

/** A request its caller cancelled: nobody waits for the answer. */
export class RequestCancelledError extends Error {
  override readonly name = "AbortError";
  constructor() {
    super("The request was cancelled by its caller");
  }
}

async function respond(
  nc: NatsConnection,
  service: BackendService,
  msg: Msg,
  entry: HandlerEntry | undefined,
  options: ServeOptions,
  signal: AbortSignal,
): Promise<void> {
  const parent = extractTraceContext(msg.headers);
  await withMessagingSpan(`process ${msg.subject}`, SpanKind.CONSUMER, msg.subject, parent, async () => {
    let envelope: ReplyEnvelope;
    try {
      if (!entry) {
        options.onRejected?.(msg.subject, "unknown operation");
        throw new ServiceError("not_found", `Unknown operation ${msg.subject}`);
      }
      const ref = msg.headers?.get(headerNames.payloadRef);
      const body = ref ? await (await PayloadStore.for(nc, service)).take(ref) : msg.data;
      const json = safeJson(body);
      const input = parseOrIssues(entry.operation.request, json, "body");
      if (!input.success) {
        const reason = json === undefined && body.length > 0 ? "body is not JSON" : `body breaks the contract (${input.issues.length} issue(s))`;
        options.onRejected?.(msg.subject, reason);
        throw new ServiceError("validation", "Request validation failed", { issues: input.issues });
      }
      const data = await entry.handle(input.data, contextFrom(msg.headers, msg.subject, body, entry.operation, options.sealer, signal));
      envelope = { ok: true, data };
    } catch (error) {
      const serviceError = ServiceError.from(error);
      // A cancelled request's abort is expected, not a failure to report.
      if (serviceError.category === "unknown" && !signal.aborted) options.onError?.(error, msg.subject);
      envelope = { ok: false, error: serviceError.toWire() };
    }
    const body = encoder.encode(JSON.stringify(envelope));
    if (body.length <= SPILL_THRESHOLD_BYTES) {
      msg.respond(body);
      return;
    }
    try {
      const hdrs = natsHeaders();
      hdrs.set(headerNames.payloadRef, await (await PayloadStore.for(nc, service)).park(body));
      msg.respond(new Uint8Array(), { headers: hdrs });
    } catch (error) {
      options.onError?.(error, msg.subject);
      const failure = new ServiceError("service_unavailable", "The reply was too large to send and could not be stored; retry shortly");
      msg.respond(encoder.encode(JSON.stringify({ ok: false, error: failure.toWire() })));
    }
  });
}

/**
 * The handler's context. A provider key arrives only sealed: an operation that calls the provider
 * gets it opened here (bound to this subject, request id and body, so a token captured elsewhere
 * does not open); a job admission keeps the sealed header for its worker; a key in clear is refused.
 */
function contextFrom(
  hdrs: MsgHdrs | undefined,
  subject: string,
  body: Uint8Array,
  operation: Operation,
  sealer: KeySealer | undefined,
  signal: AbortSignal,
): HandlerContext {
  if (hdrs?.get(headerNames.providerKey)) {
    throw new ServiceError("auth", "A provider key reached this service in clear text; only sealed keys are accepted");
  }
  const requestId = hdrs?.get(headerNames.requestId) || randomUUID();
  const sealed = hdrs?.get(headerNames.sealedProviderKey) || undefined;
  let providerKey: string | undefined;
  if (sealed && operation.providerKey === "request") {
    if (!sealer) throw new ServiceError("unknown", "This service was started without JOB_KEY_SECRET and cannot open provider keys");
    providerKey = sealer.open(sealed, keyBindings.request(subject, requestId, body));
  }
  return {
    subject,
    requestId,
    providerKey,
    signal,
    header: (name) => hdrs?.get(name) || undefined,
  };
}
