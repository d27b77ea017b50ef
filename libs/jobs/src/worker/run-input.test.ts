import { describe, expect, it } from "vitest";
import { ServiceError, type JobRunCommand, type ObjectRef } from "@litrev/contracts";
import type { JobInfra } from "../infra";
import { inputReads } from "./run-input";

/** A job's input of `chunks` chunks whose reads are logged and settled by hand. */
function input(chunks: number) {
  const reads: { n: number; settle: (items: unknown[] | Error) => void }[] = [];
  const infra = {
    data: {
      readChunk: (_ref: ObjectRef, n: number) =>
        new Promise<unknown[]>((resolve, reject) => reads.push({ n, settle: (items) => (items instanceof Error ? reject(items) : resolve(items)) })),
    },
  } as unknown as JobInfra;
  const command = { input: { object: "input/job-1", bytes: 1, chunks } } as unknown as JobRunCommand;
  return { reads, items: () => inputReads(infra, command, new AbortController().signal).inputItems<number>("papers")[Symbol.asyncIterator]() };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("a job's input items", () => {
  it("are read one chunk ahead of the one handed out: the next read overlaps the work on this one", async () => {
    const { reads, items } = input(3);
    const chunks = items();
    const first = chunks.next();
    await turn();
    expect(reads.map((r) => r.n)).toEqual([0]);
    reads[0]!.settle([1, 2]);
    expect(await first).toEqual({ done: false, value: [1, 2] });
    // Handed out chunk 0: chunk 1 is under way, chunk 2 not yet.
    expect(reads.map((r) => r.n)).toEqual([0, 1]);
    reads[1]!.settle([3]);
    expect(await chunks.next()).toEqual({ done: false, value: [3] });
    expect(reads.map((r) => r.n)).toEqual([0, 1, 2]);
    reads[2]!.settle([4]);
    expect(await chunks.next()).toEqual({ done: false, value: [4] });
    expect(await chunks.next()).toEqual({ done: true, value: undefined });
    expect(reads).toHaveLength(3);
  });

  it("leave no rejection unhandled when the reader stops while the next chunk's read fails", async () => {
    const unhandled: unknown[] = [];
    const seen = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", seen);
    try {
      const { reads, items } = input(2);
      const chunks = items();
      const first = chunks.next();
      await turn();
      reads[0]!.settle([1]);
      await first;
      await chunks.return!(undefined); // e.g. a cancelled stage
      // A failure the reads do not retry: it rejects the read left under way.
      reads[1]!.settle(new ServiceError("validation", "The stored list is no longer complete"));
      await turn();
      await turn();
      expect(reads).toHaveLength(2);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", seen);
    }
  });
});
