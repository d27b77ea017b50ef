import { jobKind, type JobRunCommand } from "@litrev/contracts";
import type { JobInfra } from "../infra";
import { InputTexts } from "../item-texts";
import { listChunks, readListChunk, readListHead, readWholeInput } from "../list-input";
import { retrying } from "../retry";
import type { JsonRecord } from "../store/job-store";
import type { JobContext } from "./types";

/** A run's reads of its job's input, for the handler; retried through a brief NATS outage like the run's other reads. */
export function inputReads(infra: JobInfra, command: JobRunCommand, signal: AbortSignal): Pick<JobContext, "input" | "inputHead" | "inputItems"> {
  const ref = command.input;
  let whole: Promise<unknown> | undefined;
  return {
    input: <T>() => {
      whole ??= ref ? retrying(() => readWholeInput(infra.data, ref), { signal }) : Promise.resolve(null);
      return whole as Promise<T>;
    },
    inputHead: <T>(list: string) =>
      (ref ? retrying(() => readListHead(infra.data, ref, list), { signal }) : Promise.resolve({ head: {}, count: 0 })) as Promise<{ head: T; count: number }>,
    // Read as it is consumed, one chunk ahead: the next chunk's read (object-store round trips)
    // overlaps the calls on this one, so a stage's window of calls never waits for it.
    inputItems: async function* <T>(list: string): AsyncGenerator<T[]> {
      if (!ref) return;
      const chunks = listChunks(ref);
      const read = (n: number) => {
        const chunk = retrying(() => readListChunk(infra.data, ref, list, n), { signal });
        // Awaited when its turn comes; a consumer that stops first leaves it, which must not count as unhandled.
        chunk.catch(() => undefined);
        return chunk;
      };
      let next = chunks > 0 ? read(0) : undefined;
      for (let n = 0; next; n++) {
        const chunk = await next;
        next = n + 1 < chunks ? read(n + 1) : undefined;
        yield chunk as T[];
      }
    },
  };
}

/** Looks up the finished items' titles and abstracts in the job's input (still there until clean-up), for its artifact. */
export function inputTexts(infra: JobInfra, command: JobRunCommand | undefined): InputTexts | undefined {
  const ref = command?.input;
  if (!ref) return undefined;
  const list = jobKind(infra.service).list;
  return new InputTexts(infra.service, listChunks(ref), (n) => readListChunk(infra.data, ref, list, n) as Promise<JsonRecord[]>);
}
