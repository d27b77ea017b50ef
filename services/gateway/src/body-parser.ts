import { parseChunked } from "@discoveryjs/json-ext";
import type { FastifyRequest } from "fastify";
import { jobKind, JOB_SERVICES, ServiceError, type RequestLimits } from "@litrev/contracts";
import { JsonShape } from "./json-scan";
import { OFF_LOOP_MIN_BYTES, type OffLoopParser } from "./off-loop-parse";
import { validatedOffLoop } from "./validation";

const MIB = 1024 * 1024;

/** Room for everything besides the papers and criteria: descriptions, questions, options. */
const REST_BYTES = MIB;

/**
 * The largest request body, in bytes: `BODY_LIMIT_MB` when set, else the largest legitimate
 * request the other limits admit (the largest creation of any job kind: average papers with every
 * criterion or field at its longest), so lowering those limits lowers this one too.
 */
export function bodyLimitBytes(env: RequestLimits & { BODY_LIMIT_MB?: number | undefined }): number {
  if (env.BODY_LIMIT_MB !== undefined) return env.BODY_LIMIT_MB * MIB;
  const largest = Math.max(0, ...JOB_SERVICES.map((service) => jobKind(service).limits?.largestCreation?.(env) ?? 0));
  return Math.ceil((largest + REST_BYTES) / MIB) * MIB;
}

export interface BodyLimits {
  bytes: number;
  depth: number;
  values: number;
  /** Bytes of bodies one owner may have in the gateway's memory at once, all its requests together. */
  ownerBytes: number;
}

/**
 * Bytes of request bodies held per owner while they arrive and parse, so one client's concurrent
 * uploads cannot fill the gateway's memory (at most one entry per owner of a configured key).
 */
class HeldBodies {
  readonly #held = new Map<string, number>();

  constructor(private readonly max: number) {}

  take(owner: string, bytes: number): boolean {
    const held = (this.#held.get(owner) ?? 0) + bytes;
    if (held > this.max) return false;
    this.#held.set(owner, held);
    return true;
  }

  give(owner: string, bytes: number): void {
    const held = (this.#held.get(owner) ?? 0) - bytes;
    if (held > 0) this.#held.set(owner, held);
    else this.#held.delete(owner);
  }
}

const tooMuchHeld = (max: number) =>
  new ServiceError("rate_limit", `This client is sending more than ${Math.round(max / MIB)} MB of request bodies at once (twice the body limit, docs/limits.md); retry when one has been answered`, {
    retryAfterMs: 1_000,
  });

/** A body refused for its size, in bytes or in JSON values: `413` with the spec's simple body. */
export class BodyTooLarge extends Error {
  readonly statusCode = 413;
}

export const bodyTooLarge = (bytes: number) =>
  new BodyTooLarge(`Request body exceeds the ${Math.round(bytes / MIB)} MB limit (BODY_LIMIT_MB, docs/limits.md)`);

const tooManyValues = (max: number) =>
  new BodyTooLarge(`Request body holds more than ${max.toLocaleString("en-US")} JSON values (MAX_JSON_VALUES, docs/limits.md)`);

export function jsonInvalid(): ServiceError {
  return new ServiceError("validation", "JSON decode error", {
    issues: [{ type: "json_invalid", loc: ["body"], msg: "JSON decode error" }],
  });
}

function jsonTooDeep(max: number): ServiceError {
  return new ServiceError("validation", "JSON nesting too deep", {
    issues: [{ type: "json_too_deep", loc: ["body"], msg: `JSON nesting is deeper than ${max} levels (MAX_JSON_DEPTH, docs/limits.md)` }],
  });
}

type Done = (error: Error | null, body?: unknown) => void;

/** The chunks one at a time, each after a turn of the event loop. */
async function* turnByTurn(chunks: readonly Buffer[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) {
    yield chunk;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Requests whose body was refused part-way, the rest of it read and thrown away. */
const discarding = new WeakSet<object>();

/**
 * Whether the rest of this request's refused body is being read and discarded, so its connection
 * may stay open: a client still sending then reads the answer, where closing the connection
 * under it would reset it and lose the answer. Only for a declared length within the body limit.
 */
export const discardsRest = (raw: object): boolean => discarding.has(raw);

/**
 * Reads a request body as JSON within `limits`, refusing it as soon as the bytes received so far
 * exceed one: the size and shape are measured chunk by chunk as the body arrives (each chunk a
 * short step of the event loop), so a body of millions of tiny values is refused after its first
 * few megabytes, never buffered whole or handed to `JSON.parse`, whose cost grows with the values.
 * Any content type is read as JSON: clients often omit it (curl -d sends form encoding).
 */
export function jsonBodyParser(limits: BodyLimits, offLoop?: OffLoopParser) {
  const held = new HeldBodies(limits.ownerBytes);
  return (request: FastifyRequest, payload: NodeJS.ReadableStream, done: Done): void => {
    const declared = Number(request.headers["content-length"]);
    if (declared > limits.bytes) return done(bodyTooLarge(limits.bytes));
    const owner = request.principal?.owner ?? "";
    const shape = new JsonShape(limits);
    let chunks: Buffer[] = [];
    let received = 0;
    let taken = 0;
    let settled = false;

    const finish = (error: Error | null, body?: unknown) => {
      if (settled) return;
      settled = true;
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onEnd);
      payload.removeListener("close", onClose);
      chunks = [];
      held.give(owner, taken);
      taken = 0;
      done(error, body);
    };
    // One chunk per turn of the event loop and connection, so a fast upload cannot hold the loop
    // for a run of chunks (other requests are served in between); the socket waits meanwhile.
    const resume = () => payload.resume();
    const yieldTurn = () => {
      payload.pause();
      setImmediate(resume);
    };
    const refuseEarly = (error: Error) => {
      if (!Number.isNaN(declared)) discarding.add(request.raw);
      finish(error);
      // Read on, dropping what arrives: without a listener the stream would stop reading.
      payload.on("data", yieldTurn);
    };
    function onData(data: Buffer | string) {
      const chunk = typeof data === "string" ? Buffer.from(data) : data;
      received += chunk.length;
      if (received > limits.bytes) return finish(bodyTooLarge(limits.bytes));
      if (!held.take(owner, chunk.length)) return refuseEarly(tooMuchHeld(limits.ownerBytes));
      taken += chunk.length;
      const excess = shape.push(chunk);
      if (excess === "depth") return refuseEarly(jsonTooDeep(limits.depth));
      if (excess === "values") return refuseEarly(tooManyValues(limits.values));
      chunks.push(chunk);
      yieldTurn();
    }
    // A client gone before the end: nothing to answer, but what its body held is given back.
    function onClose() {
      finish(new ServiceError("validation", "The request body could not be read", { simple: true }));
    }
    function onEnd(error?: Error) {
      // The body is whole: a `close` that follows while it parses is not a client gone early.
      payload.removeListener("close", onClose);
      if (error) return finish(new ServiceError("validation", "The request body could not be read", { simple: true }));
      if (!Number.isNaN(declared) && received !== declared) {
        return finish(new ServiceError("validation", "Request body size did not match Content-Length", { simple: true }));
      }
      // No JSON value at all (an empty or blank body): no body, as before.
      if (shape.values === 0 && Buffer.concat(chunks, received).toString("utf8").trim() === "") return finish(null, undefined);
      // A large body of a forwarded operation is parsed and validated on the parser thread; any
      // other is parsed a received chunk per turn of the event loop. Either way one large valid body
      // cannot hold the loop for a whole `JSON.parse` (other requests, /health among them, run between).
      const operation = request.routeOptions.config?.operation;
      if (offLoop && operation && received >= OFF_LOOP_MIN_BYTES) {
        offLoop.parse(Buffer.concat(chunks, received), operation).then(
          (result) => {
            if (result.kind === "invalid-json") return finish(jsonInvalid());
            if (result.kind === "issues") return finish(new ServiceError("validation", "Request validation failed", { issues: result.issues }));
            const body = JSON.parse(result.json) as object;
            validatedOffLoop.add(body);
            finish(null, body);
          },
          () => finish(new ServiceError("unknown", "The request body could not be parsed", { simple: true })),
        );
        return;
      }
      parseChunked(turnByTurn(chunks)).then(
        (body: unknown) => finish(null, body),
        () => finish(jsonInvalid()),
      );
    }
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onEnd);
    payload.on("close", onClose);
    payload.resume();
  };
}
