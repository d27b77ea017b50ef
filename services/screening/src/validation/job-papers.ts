import { ServiceError } from "@litrev/contracts";
import { jobPaperOf, thresholdOf, type JobPaper } from "@litrev/evaluation";
import type { JobReader } from "@litrev/jobs";

/**
 * The one read of a finished job the validation samples make: its papers' include votes and
 * decisions, R and the threshold, for the requesting client only (another client's job is a 404,
 * as its poll is). Only a completed job can be validated.
 */
export async function finishedJobPapers(reader: JobReader, jobId: string, owner: string | undefined): Promise<{ papers: JobPaper[]; repetitions: number; threshold: number }> {
  const job = await reader.finished(jobId, owner);
  const status = job.record.status;
  if (status !== "completed") {
    throw new ServiceError("conflict", status === "failed" ? "The job failed: only a completed job can be validated" : `The job is ${status}: it can be validated once it has completed`, { simple: true });
  }
  const papers: JobPaper[] = [];
  for await (const chunk of job.chunks()) for (const item of chunk) papers.push(jobPaperOf(item as { id: string | number }));
  const config = (job.record.config ?? {}) as Record<string, unknown>;
  const repetitions = typeof config.repetitions === "number" && Number.isInteger(config.repetitions) ? config.repetitions : 0;
  return { papers, repetitions, threshold: thresholdOf(config) };
}
