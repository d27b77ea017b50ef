import { headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
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
import type { NatsLink } from "./connection";
import { extractTraceContext, injectTraceContext, SpanKind, withMessagingSpan } from "./trace-context";


const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Per-request facts that cross the hop beside the body. The provider key is a secret. */
export interface CallContext {
  requestId: string;
  providerKey?: string | undefined;
}

export interface CallOptions extends Partial<CallContext> {
  timeoutMs?: number;
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
    if (options.providerKey) hdrs.set(headerNames.providerKey, options.providerKey);
    injectTraceContext(hdrs);

    let reply: Msg;
    try {
      reply = await nc.request(subject, encoder.encode(JSON.stringify(input)), { timeout, headers: hdrs });
    } catch (error) {
      throw requestFailure(error, operation.service, timeout);
    }
    const envelope = ReplyEnvelope.safeParse(safeJson(reply.data));
    if (!envelope.success) {
      throw new ServiceError("unknown", `The ${operation.service} service sent a malformed reply`);
    }
    if (!envelope.data.ok) throw ServiceError.fromWire(envelope.data.error);
    const parsed = operation.response.safeParse(envelope.data.data);
    if (!parsed.success) {
      throw new ServiceError("unknown", `The ${operation.service} service sent a reply that breaks its contract`, {
        cause: parsed.error,
      });
    }
    return parsed.data;
  });
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
): Subscription {
  const byName = new Map(entries.map((entry) => [entry.operation.name, entry]));
  const prefix = subjects.rpc(service, "");
  return nc.subscribe(subjects.rpcWildcard(service), {
    queue: subjects.queueGroup(service),
    callback: (err, msg) => {
      if (err) {
        options.onError?.(err, subjects.rpcWildcard(service));
        return;
      }
      const entry = byName.get(msg.subject.slice(prefix.length));
      void respond(msg, entry, options);
    },
  });
}

async function respond(msg: Msg, entry: HandlerEntry | undefined, options: ServeOptions): Promise<void> {
  const parent = extractTraceContext(msg.headers);
  await withMessagingSpan(`process ${msg.subject}`, SpanKind.CONSUMER, msg.subject, parent, async () => {
    let envelope: ReplyEnvelope;
    try {
      if (!entry) throw new ServiceError("not_found", `Unknown operation ${msg.subject}`);
      const input = parseOrIssues(entry.operation.request, safeJson(msg.data), "body");
      if (!input.success) {
        throw new ServiceError("validation", "Request validation failed", { issues: input.issues });
      }
      const data = await entry.handle(input.data, contextFrom(msg.headers, msg.subject));
      envelope = { ok: true, data };
    } catch (error) {
      const serviceError = ServiceError.from(error);
      if (serviceError.category === "unknown") options.onError?.(error, msg.subject);
      envelope = { ok: false, error: serviceError.toWire() };
    }
    msg.respond(encoder.encode(JSON.stringify(envelope)));
  });
}

function contextFrom(hdrs: MsgHdrs | undefined, subject: string): HandlerContext {
  const providerKey = hdrs?.get(headerNames.providerKey) || undefined;
  return { subject, requestId: hdrs?.get(headerNames.requestId) || randomUUID(), providerKey };
}
