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
    // One chunk in memory at a time, read as it is consumed.
    inputItems: async function* <T>(list: string): AsyncGenerator<T[]> {
      if (!ref) return;
      for (let n = 0; n < listChunks(ref); n++) yield (await retrying(() => readListChunk(infra.data, ref, list, n), { signal })) as T[];
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
