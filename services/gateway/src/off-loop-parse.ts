import { Worker } from "node:worker_threads";
import type { RequestLimits } from "@litrev/contracts";
import type { OffLoopRequest, OffLoopResult } from "./body-worker";

/** Bodies at least this large are parsed and validated off the event loop (smaller ones cost less than the hand-over). */
export const OFF_LOOP_MIN_BYTES = 1024 * 1024;

/**
 * One worker thread that parses, limit-checks and validates large request bodies, so that a
 * valid body of millions of values never holds the gateway's event loop for the length of a
 * `JSON.parse` and a schema pass: the loop only reads back the validated value, as JSON text
 * without the keys the contract strips. Bodies are handed over one at a time in arrival order;
 * how many can wait is bounded by the bytes a client may have in flight (docs/limits.md).
 */
export class OffLoopParser {
  #worker: Worker | undefined;
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (result: OffLoopResult) => void; reject: (error: Error) => void }>();

  constructor(private readonly limits: RequestLimits) {}

  parse(bytes: Buffer, operation: string): Promise<OffLoopResult> {
    const worker = this.#start();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      // A copy into a buffer of its own is transferred, not cloned: the worker owns it from here.
      const copy = new Uint8Array(bytes.length);
      copy.set(bytes);
      const request: OffLoopRequest = { id, operation, bytes: copy };
      worker.postMessage(request, [copy.buffer]);
    });
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker) await worker.terminate();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL("./body-worker.ts", import.meta.url), { workerData: this.limits, execArgv: ["--import", "tsx"] });
    worker.unref();
    worker.on("message", ({ id, result }: { id: number; result: OffLoopResult }) => {
      this.#waiting.get(id)?.resolve(result);
      this.#waiting.delete(id);
    });
    // A worker that died fails what it held; the next body starts a new one.
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const waiting of this.#waiting.values()) waiting.reject(error);
      this.#waiting.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the body parser thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }
}
