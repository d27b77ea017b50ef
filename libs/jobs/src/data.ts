import { setTimeout as sleep } from "node:timers/promises";
import { Objm, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { jobDataObjects, jobNames, ServiceError, type JobService, type ObjectRef } from "@litrev/contracts";
import { bufferCollector } from "./buffer-collector";
import { unavailable } from "./nats-errors";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A read that received no chunk for this long checks whether its object was deleted meanwhile. */
const STALL_CHECK_MS = 2_000;
/** Upper bound on one read (a 20,000-paper input is ~36 MB; reads normally take a few seconds). */
const READ_BUDGET_MS = 60_000;

export interface JobDataOptions {
  stallCheckMs?: number;
  readBudgetMs?: number;
}

/** Names of lists staged by the gateway (`jobDataObjects.staged`): kept in the staging store. */
const STAGED_PREFIX = jobDataObjects.staged("");

/**
 * Job inputs and results in a JetStream Object Store (128 KiB chunks), so no value of any size ever
 * rides in one NATS message: a 10,000-paper input is ~15 MB, its result several MB.
 *
 * Lists the gateway stages (`staged/…`) live in a separate store, the only one of a job service the
 * gateway may write (docs/security.md § NATS); every read, write and delete of a `staged/` name goes
 * there.
 */
export class JobData {
  /** Reads in progress by name: concurrent readers of one object share one transfer and one parse. */
  readonly #reads = new Map<string, Promise<unknown>>();
  readonly #stallCheckMs: number;
  readonly #readBudgetMs: number;

  constructor(
    readonly store: ObjectStore,
    options: JobDataOptions = {},
    /** The staging store; without it (tests, older callers) staged lists stay in `store`. */
    readonly staging: ObjectStore = store,
  ) {
    this.#stallCheckMs = options.stallCheckMs ?? STALL_CHECK_MS;
    this.#readBudgetMs = options.readBudgetMs ?? READ_BUDGET_MS;
  }

  /** Binds to a service's existing data and staging stores (the gateway; `openJobInfra` creates them). */
  static async open(nc: NatsConnection, service: JobService, options: JobDataOptions = {}): Promise<JobData> {
    const names = jobNames(service);
    const objm = new Objm(nc);
    const [store, staging] = await Promise.all([objm.open(names.dataBucket), objm.open(names.stagingBucket)]);
    return new JobData(store, options, staging);
  }

  /** The store holding `name`. */
  #bucket(name: string): ObjectStore {
    return name.startsWith(STAGED_PREFIX) ? this.staging : this.store;
  }

  async putJson(name: string, value: unknown): Promise<ObjectRef> {
    const bytes = encoder.encode(JSON.stringify(value));
    await this.#bucket(name).putBlob({ name }, bytes);
    return { object: name, bytes: bytes.length };
  }

  /**
   * The parsed value, or null when the object does not exist (expired, deleted — also when it is
   * deleted while being read). Concurrent callers for one name share one read and receive the same
   * value: treat it as read-only. NATS failures become retryable ServiceErrors.
   */
  getJson<T = unknown>(name: string): Promise<T | null> {
    let read = this.#reads.get(name);
    if (!read) {
      read = this.#read(name).then((parts) => (parts ? (JSON.parse(decoder.decode(joined(parts))) as unknown) : null));
      const shared = read;
      void shared.then(
        () => this.#reads.delete(name),
        () => this.#reads.delete(name),
      );
      this.#reads.set(name, shared);
    }
    return read as Promise<T | null>;
  }

  /**
   * Writes a list in the one chunk format of the tree (inputs, staged lists, partial items,
   * finished artifacts): chunk objects `<prefix>/0 … <prefix>/<k-1>` of about 1 MB of JSON Lines
   * (one item per line), each built as the store takes it, then `<prefix>/head` holding `head`, so
   * a head found means every chunk is there. Each chunk is read back alone (`readChunk`), so a large
   * list is never one string, one buffer or one parse, when written or read. (One large object
   * would not do: the object store client buffers a whole object for a slow reader.)
   */
  async putLines(prefix: string, head: unknown, items: Iterable<unknown> | AsyncIterable<unknown>): Promise<ObjectRef> {
    const writer = this.lines(prefix);
    for await (const item of items) await writer.add([item]);
    return writer.close(head);
  }

  /** A writer of one chunked list under `prefix`, for lists that arrive piece by piece. */
  lines(prefix: string): LinesWriter {
    return new LinesWriter(this.#bucket(prefix), prefix);
  }

  /** Replaces the head of a list written by `putLines` (the items stay). */
  async putHead(ref: ObjectRef, head: unknown): Promise<void> {
    await this.#bucket(ref.object).putBlob({ name: linesObject(ref.object, "head") }, encoder.encode(JSON.stringify(head)));
  }

  /**
   * The list's reference with the digests of its head and chunks as they are now (`ObjectRef.digests`):
   * admission seals a staged list this way, so that every later read refuses a part replaced since.
   * Throws when a part is missing.
   */
  async seal(ref: ObjectRef): Promise<ObjectRef> {
    const bucket = this.#bucket(ref.object);
    const digests: string[] = [];
    for (const part of ["head" as const, ...Array.from({ length: ref.chunks ?? 0 }, (_, n) => n)]) {
      const info = await bucket.info(linesObject(ref.object, part)).catch((error: unknown) => {
        throw unavailable(error, "The job data store");
      });
      if (!info || info.deleted) throw new ServiceError("validation", `The staged list ${ref.object} is incomplete (${String(part)} is missing)`);
      digests.push(info.digest);
    }
    return { ...ref, digests };
  }

  /** The head of a list written by `putLines`, or null when it no longer exists. */
  async readHead<T = unknown>(ref: ObjectRef): Promise<T | null> {
    const name = linesObject(ref.object, "head");
    const digest = ref.digests?.[0];
    if (digest === undefined) return this.getJson<T>(name);
    const parts = await this.#read(name, digest);
    return parts ? (JSON.parse(decoder.decode(joined(parts))) as T) : null;
  }

  /**
   * The items of a list written by `putLines`, in order, one chunk in memory at a time. Throws
   * when a chunk is missing (the list expired or was removed): a list never ends short silently.
   */
  async *readLines(ref: ObjectRef): AsyncGenerator<unknown[]> {
    for (let n = 0; n < (ref.chunks ?? 0); n++) yield await this.readChunk(ref, n);
  }

  /** Chunk `n` of a list written by `putLines`, its items parsed; throws when it is missing. */
  async readChunk(ref: ObjectRef, n: number): Promise<unknown[]> {
    return JsonLines.parse(await this.readChunkParts(ref, n));
  }

  /**
   * Chunk `n` of a list as stored, in the pieces the store delivered it (for `JsonLines.parse`: a
   * chunk that is only parsed is never copied into one buffer); throws when it is missing.
   */
  readChunkParts(ref: ObjectRef, n: number): Promise<Parts> {
    return confirmedRead(
      () => this.#read(linesObject(ref.object, n), ref.digests?.[n + 1]),
      () => new ServiceError("unknown", `The stored list ${ref.object} is no longer complete (chunk ${n} is missing)`),
    );
  }

  /** Removes a list written by `putLines` (or a single object, for refs without chunks). */
  async deleteLines(ref: ObjectRef): Promise<void> {
    if (ref.chunks === undefined) return this.delete(ref.object);
    await this.delete(linesObject(ref.object, "head"));
    for (let n = 0; n < ref.chunks; n++) await this.delete(linesObject(ref.object, n));
  }

  /** Removes every object of the data store whose name starts with one of `prefixes` (a listing of the store: for erasing a job). */
  async deleteByPrefix(prefixes: readonly string[]): Promise<number> {
    const entries = await this.store.list().catch((error: unknown) => {
      throw unavailable(error, "The job data store");
    });
    const names = entries.filter((e) => !e.deleted && prefixes.some((p) => e.name.startsWith(p))).map((e) => e.name);
    for (const name of names) await this.store.delete(name);
    return names.length;
  }

  async delete(name: string): Promise<void> {
    // Already gone: deleting is housekeeping, the bucket's max age sweeps leftovers.
    await this.#bucket(name).delete(name).catch(() => undefined);
  }

  /**
   * The object's bytes; with `digest`, only if the object is still the one that digest names. The
   * client's reader waits for the last chunk forever, and chunks purged by a concurrent delete
   * never come: so a read that stalls asks whether the object still exists, and ends with null if not.
   */
  async #read(name: string, digest?: string): Promise<Parts | null> {
    // A consumer that stops delivering while the object is still there is replaced (within the read
    // budget): on a NATS cluster it may sit on a server that restarted or lost its stream's leadership.
    const bucket = this.#bucket(name);
    const deadline = Date.now() + this.#readBudgetMs;
    for (;;) {
      const read = await this.#readOnce(bucket, name, digest);
      if (read !== STALLED) return read;
      const info = await bucket.info(name).catch(() => undefined);
      if (info === null || info?.deleted) return null;
      if (Date.now() > deadline) {
        throw new ServiceError("timeout", `Reading the stored object ${name} took longer than ${this.#readBudgetMs} ms; retry shortly`);
      }
    }
  }

  /** One consumer's read of the object: its bytes as delivered, null if absent, or STALLED when a chunk took too long. */
  async #readOnce(bucket: ObjectStore, name: string, digest?: string): Promise<Parts | null | typeof STALLED> {
    const result = await bucket.get(name).catch((error: unknown) => {
      throw unavailable(error, "The job data store");
    });
    if (!result) return null;
    if (digest !== undefined && result.info.digest !== digest) {
      // The client checks the bytes against the object's own digest; this checks the object is the admitted one.
      result.error.catch(() => undefined);
      void result.data.cancel().catch(() => undefined);
      throw new ServiceError("unknown", `The stored object ${name} changed after the job was admitted; it is not used`);
    }
    // Failures also surface through `data`; this promise must never be left unhandled.
    result.error.catch(() => undefined);
    const reader = result.data.getReader();
    const chunks: Uint8Array[] = [];
    let finished = false;
    let next = reader.read();
    try {
      for (;;) {
        const step = await within(next, this.#stallCheckMs);
        if (step === STALLED) return STALLED;
        if (step.done) break;
        chunks.push(step.value);
        bufferCollector.read(step.value.length);
        next = reader.read();
      }
      finished = true;
    } catch (error) {
      throw unavailable(error, "The job data store");
    } finally {
      // An abandoned read stops its consumer (a completed stream has released it already).
      if (!finished) {
        next.catch(() => undefined);
        void reader.cancel().catch(() => undefined);
      }
    }
    return chunks;
  }
}

/** Reads of an object that must exist, before its absence is believed (see `confirmedRead`). */
const ABSENT_CHECKS_MS = [250, 1_000, 2_500];

/**
 * `read()`'s value for an object that must exist; `missing()` is thrown only once later reads
 * confirm the absence. On a NATS cluster a server that lost its stream's leadership while paused
 * may still answer a read as leader for a moment, from a store without the newest objects.
 */
export async function confirmedRead<T>(read: () => Promise<T | null>, missing: () => Error): Promise<T> {
  for (const waitMs of [...ABSENT_CHECKS_MS, undefined]) {
    const value = await read();
    if (value !== null) return value;
    if (waitMs !== undefined) await sleep(waitMs);
  }
  throw missing();
}

/** An object's bytes in the pieces the store delivered them. */
export type Parts = readonly Uint8Array[];

/** The pieces in one buffer. */
const joined = (parts: Parts): Uint8Array => (parts.length === 1 ? parts[0]! : Buffer.concat(parts));

/** A chunk's bytes in the one chunk format: one JSON value per line. */
export const JsonLines = {
  /** The chunk's values, from its bytes in one buffer or in pieces (a line may span pieces). */
  parse(bytes: Uint8Array | Parts): unknown[] {
    const items: unknown[] = [];
    const line = (text: string) => {
      if (text.length > 0) items.push(JSON.parse(text));
    };
    // The start of a line that a later piece ends (bytes: a character may be split too).
    let begun: Buffer | undefined;
    for (const part of bytes instanceof Uint8Array ? [bytes] : bytes) {
      const buffer = Buffer.from(part.buffer, part.byteOffset, part.length);
      let start = 0;
      for (let end = buffer.indexOf(NEWLINE); end >= 0; end = buffer.indexOf(NEWLINE, start)) {
        line(begun ? Buffer.concat([begun, buffer.subarray(start, end)]).toString("utf8") : buffer.toString("utf8", start, end));
        begun = undefined;
        start = end + 1;
      }
      if (start < buffer.length) begun = begun ? Buffer.concat([begun, buffer.subarray(start)]) : buffer.subarray(start);
    }
    if (begun) line(begun.toString("utf8"));
    return items;
  },
  /**
   * The chunk's items as the inside of a JSON array (`a,b,c`): each line's newline becomes a comma
   * and the last is dropped. In place, in the pieces the store delivered (views of the same bytes:
   * the caller gives them up), so a large job's poll costs no second copy of each chunk, and leaves
   * no joined copy for the collector. No parse: a JSON text holds no raw newline.
   */
  asArrayItems(parts: Parts): Buffer[] {
    const out: Buffer[] = [];
    for (const part of parts) {
      const bytes = Buffer.from(part.buffer, part.byteOffset, part.length);
      for (let at = bytes.indexOf(NEWLINE); at >= 0; at = bytes.indexOf(NEWLINE, at + 1)) bytes[at] = COMMA;
      if (bytes.length > 0) out.push(bytes);
    }
    const last = out.at(-1);
    if (last && last[last.length - 1] === COMMA) {
      if (last.length === 1) out.pop();
      else out[out.length - 1] = last.subarray(0, last.length - 1);
    }
    return out;
  },
};

/**
 * Builds one chunked list (see `JobData.putLines`): items are buffered as JSON Lines and written as a
 * chunk once about 1 MB is buffered, or when the caller flushes; `close` writes the rest, then the
 * head. A failed write keeps its buffer, so the call may be retried and writes the same chunk again.
 */
export class LinesWriter {
  #parts: string[] = [];
  #size = 0;
  #lines = 0;
  #buffered = 0;
  #chunks = 0;
  #bytes = 0;

  constructor(
    private readonly bucket: ObjectStore,
    readonly prefix: string,
  ) {}

  /** The list so far: the chunks written (items still buffered are not in it). */
  get ref(): ObjectRef {
    return { object: this.prefix, bytes: this.#bytes, lines: this.#lines, chunks: this.#chunks };
  }

  /** Buffers the items; writes a chunk whenever about 1 MB is buffered. */
  async add(items: Iterable<unknown>): Promise<void> {
    for (const item of items) if (this.push([item])) await this.flush();
  }

  /**
   * Buffers the items without writing; true when about 1 MB or more is buffered (time to `flush`).
   * For callers that retry a failed write: `flush` may be repeated, `add` may not.
   */
  push(items: Iterable<unknown>): boolean {
    for (const item of items) {
      const line = JSON.stringify(item) + "\n";
      this.#parts.push(line);
      this.#size += line.length;
      this.#buffered++;
    }
    return this.#size >= LINES_CHUNK_CHARS;
  }

  /** Writes whatever is buffered as one more chunk (nothing when the buffer is empty). */
  async flush(): Promise<void> {
    if (this.#buffered === 0) return;
    const chunk = encoder.encode(this.#parts.join(""));
    await this.bucket.putBlob({ name: linesObject(this.prefix, this.#chunks) }, chunk);
    this.#chunks++;
    this.#bytes += chunk.length;
    this.#lines += this.#buffered;
    this.#parts = [];
    this.#size = 0;
    this.#buffered = 0;
  }

  /** The last chunk, then the head (none when `head` is undefined: the caller writes its own head elsewhere). */
  async close(head?: unknown): Promise<ObjectRef> {
    await this.flush();
    if (head !== undefined) {
      const bytes = encoder.encode(JSON.stringify(head));
      await this.bucket.putBlob({ name: linesObject(this.prefix, "head") }, bytes);
      this.#bytes += bytes.length;
    }
    return this.ref;
  }
}

const STALLED = Symbol("stalled");
const NEWLINE = 0x0a;
const COMMA = 0x2c;
/** Text per chunk of a list written by `putLines` (one NATS object of ~8 store chunks). */
const LINES_CHUNK_CHARS = 1024 * 1024;
const linesObject = (prefix: string, part: number | "head") => `${prefix}/${part}`;

/** The promise's value, or STALLED when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof STALLED> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<typeof STALLED>((resolve) => (timer = setTimeout(() => resolve(STALLED), ms)));
  try {
    return await Promise.race([promise, stalled]);
  } finally {
    clearTimeout(timer);
  }
}
