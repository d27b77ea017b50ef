import { operations, ServiceError, type JobService } from "@litrev/contracts";
import { handler, StreamedBody, type HandlerEntry } from "@litrev/messaging";
import { exportBody } from "./exports";
import { requestOwner } from "./ownership";
import type { JobReader } from "./reader";
import { buildReport, type PromptInstructions } from "./report";

const OPS = {
  screening: { export: operations.exportScreeningJob, report: operations.reportScreeningJob },
  indexer: { export: operations.exportIndexerJob, report: operations.reportIndexerJob },
} as const;

/**
 * The export and report operations of a job kind, answered by the service that owns its store:
 * the export always as a streamed body (parts), so its size never matters; the report as a value.
 * Both see only the requesting client's jobs, as a poll does.
 */
export function jobExportHandlers(service: JobService, reader: JobReader, prompts?: PromptInstructions): HandlerEntry[] {
  const ops = OPS[service];
  return [
    // Typed as the contract's string: the text reaches the caller as parts, never parsed.
    handler(ops.export, async ({ job_id, format }, ctx) => {
      const job = await reader.finished(job_id, requestOwner(ctx.header));
      // A failed job's results are partial at best: a file of them is easily taken for the whole.
      if (job.record.status !== "completed") {
        throw new ServiceError("conflict", `Job ${job_id} ${job.record.status}: it has no results to export; its report (/report) says why`, { simple: true });
      }
      return exportBody(service, job, format) as StreamedBody as unknown as string;
    }),
    handler(ops.report, async ({ job_id }, ctx) => buildReport(service, await reader.finished(job_id, requestOwner(ctx.header)), prompts)),
  ];
}
