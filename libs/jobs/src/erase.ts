import { jobDataObjects, type ObjectRef } from "@litrev/contracts";
import type { JobData } from "./data";

/**
 * Erases everything the job data store holds of one job: its input, the finished items of every
 * run (`partial/…`), and its artifact (head, items, titles and abstracts). `input` names a list the
 * gateway staged for it, in the staging store, when the caller knows it (the job's command). One
 * function for every caller that must leave nothing of a job behind (DELETE of a job). The stored
 * row, checkpoints, live state and validation samples live elsewhere and are the caller's to erase.
 */
export async function eraseJobData(data: JobData, jobId: string, input?: ObjectRef | null): Promise<void> {
  if (input) await data.deleteLines(input);
  await data.deleteByPrefix(jobDataObjects.ofJob(jobId));
}
