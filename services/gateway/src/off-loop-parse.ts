import { Worker } from "node:worker_threads";
import type { RequestLimits, ScreeningValidationResponse } from "@litrev/contracts";
import { LabelError, type ValidationInput } from "@litrev/evaluation";
import type { OffLoopRequest, OffLoopResult, ValidationRequest, ValidationResult } from "./body-worker";

/** Bodies at least this large are parsed and validated off the event loop (smaller ones cost less than the hand-over). */
export const OFF_LOOP_MIN_BYTES = 1024 * 1024;

/**
 * How long the thread stays up with nothing to parse. An idle thread keeps the heap its last body
 * grew (a 50,000-paper creation: about 70 MB of the gateway's RSS) and V8 does not collect an idle
 * isolate; ending it gives that back, and the next large body starts a new one (tens of ms).
 */
const OFF_LOOP_IDLE_MS = 5_000;

/**
 * One worker thread that parses, limit-checks and validates large request bodies, so that a
 * valid body of millions of values never holds the gateway's event loop for the length of a
 * `JSON.parse` and a schema pass: the loop only reads back the validated value, as JSON text
 * without the keys the contract strips. Bodies are handed over one at a time in arrival order;
 * how many can wait is bounded by the bytes a client may have in flight (docs/limits.md).
 * The same thread computes screening validations (`validate`), whose exact bounds cost up to a
 * second of CPU on a job of 50,000 papers; how many wait is bounded by `KEY_HEAVY_CONCURRENCY`.
 */
export class OffLoopParser {
  #worker: Worker | undefined;
  #idle: NodeJS.Timeout | undefined;
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (result: never) => void; reject: (error: Error) => void }>();

  constructor(
    private readonly limits: RequestLimits,
    private readonly idleMs = OFF_LOOP_IDLE_MS,
  ) {}

  /** Whether the thread is up now. */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  parse(bytes: Buffer, operation: string): Promise<OffLoopResult> {
    // A copy into a buffer of its own is transferred, not cloned: the worker owns it from here.
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    return this.#send<OffLoopResult>((id) => ({ id, operation, bytes: copy }), [copy.buffer]);
  }

  /** validateJob of libs/evaluation on the thread: its answer, or its LabelError again here. */
  async validate(input: ValidationInput): Promise<ScreeningValidationResponse> {
    const result = await this.#send<ValidationResult>((id): ValidationRequest => ({ id, validate: input }));
    if (result.kind === "validated") return result.response;
    if (result.kind === "labels") throw new LabelError(result.labelKind, result.labels);
    throw new Error(`the validation failed: ${result.message}`);
  }

  #send<T>(request: (id: number) => OffLoopRequest | ValidationRequest, transfer: ArrayBuffer[] = []): Promise<T> {
    const worker = this.#start();
    clearTimeout(this.#idle);
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (result: never) => void, reject });
      worker.postMessage(request(id), transfer);
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.#idle);
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failWaiting(new Error("the body parser thread was stopped"));
    if (worker) await worker.terminate();
  }

  #failWaiting(error: Error): void {
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
  }

  /** Ends the thread once nothing has been waiting for `idleMs`. */
  #endWhenIdle(): void {
    if (this.#waiting.size > 0) return;
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      if (this.#waiting.size === 0) void this.close();
    }, this.idleMs);
    this.#idle.unref();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    // From source under tsx, the thread loads tsx too; in the built image (no tsx) it is its own
    // compiled entry beside this code (scripts/lib/build.ts), and loads nothing else.
    const compiled = !import.meta.url.endsWith(".ts");
    const worker = new Worker(new URL(compiled ? "./body-worker.js" : "./body-worker.ts", import.meta.url), {
      workerData: this.limits,
      execArgv: compiled ? [] : ["--import", "tsx"],
    });
    worker.unref();
    worker.on("message", ({ id, result }: { id: number; result: never }) => {
      this.#waiting.get(id)?.resolve(result);
      this.#waiting.delete(id);
      this.#endWhenIdle();
    });
    // A worker that died fails what it held; the next body starts a new one. One ended on purpose
    // (idle, or closed) is no longer the current one and held nothing.
    const fail = (error: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#failWaiting(error);
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the body parser thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }
}
