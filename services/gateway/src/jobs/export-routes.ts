import { Readable } from "node:stream";
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { ExportQuery, headers, isJobId, JobIdParams, JobReport, operations, ReportQuery, ServiceError, type ExportFormat, type JobService } from "@litrev/contracts";
import { reportMarkdown } from "@litrev/jobs/client";
import { callOperation, callOperationStreamed } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import { ownerOf } from "./job-routes";

const OPS = {
  screening: { export: operations.exportScreeningJob, report: operations.reportScreeningJob },
  indexer: { export: operations.exportIndexerJob, report: operations.reportIndexerJob },
} as const;

const CONTENT_TYPE: Record<ExportFormat, string> = { csv: "text/csv; charset=utf-8", jsonl: "application/x-ndjson; charset=utf-8" };
const EXPORT_DESCRIPTION = "The job's results, one row (CSV, with a header row) or one JSON object (JSON Lines) per paper or record, streamed.";

const notFound = () => new ServiceError("not_found", "Job not found", { simple: true });

/**
 * Exports and methods reports of finished jobs. The owning service reads the stored results chunk
 * by chunk and parks the export in parts as it writes it; this route passes the parts on one at a
 * time, so no process holds a large export whole. Same ownership and 404 rules as a poll; a job
 * that has not finished is a 409.
 */
export function jobExportRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (app) => {
    for (const service of ["screening", "indexer"] as const satisfies readonly JobService[]) {
      const ops = OPS[service];
      const options = { timeoutMs: deps.env.READ_TIMEOUT_MS };
      // The service answers an export once it has written the whole file to the payload store
      // (seconds for 50,000 papers): a bulk read, given the longer bound of provider-backed calls.
      const exportOptions = { ...options, timeoutMs: Math.max(deps.env.READ_TIMEOUT_MS, deps.env.RPC_TIMEOUT_MS) };

      app.get(
        `/v1/${service}/jobs/:job_id/export`,
        {
          schema: {
            params: JobIdParams,
            querystring: ExportQuery,
            response: { 200: { description: EXPORT_DESCRIPTION, content: { "text/csv": { schema: z.string() }, "application/x-ndjson": { schema: z.string() } } } },
          },
        },
        async (request, reply) => {
          const { job_id } = request.params as { job_id: string };
          const { format } = request.query as { format: ExportFormat };
          if (!isJobId(job_id)) throw notFound();
          const answer = await callOperationStreamed(deps.link, ops.export, { job_id, format }, { ...exportOptions, requestId: request.id, headers: { [headers.owner]: ownerOf(request) } });
          // Byte mode with a tiny high-water mark: one part (about 1 MB) read ahead of the socket,
          // not Readable.from's default of 16 objects.
          const body = "data" in answer ? answer.data : Readable.from(answer.read(), { objectMode: false, highWaterMark: 1 });
          return reply
            .type(CONTENT_TYPE[format])
            .header("content-disposition", `attachment; filename="${service}-${job_id}.${format}"`)
            .send(body);
        },
      );

      app.get(
        `/v1/${service}/jobs/:job_id/report`,
        {
          schema: {
            params: JobIdParams,
            querystring: ReportQuery,
            response: {
              200: {
                description: "The methods report: Markdown by default, the same facts as JSON with format=json",
                content: { "text/markdown": { schema: z.string() }, "application/json": { schema: JobReport } },
              },
            },
          },
        },
        async (request, reply) => {
          const { job_id } = request.params as { job_id: string };
          const { format } = request.query as { format: "markdown" | "json" };
          if (!isJobId(job_id)) throw notFound();
          const report = await callOperation(deps.link, ops.report, { job_id }, { ...options, requestId: request.id, headers: { [headers.owner]: ownerOf(request) } });
          if (format === "json") return reply.type("application/json; charset=utf-8").send(JSON.stringify(report));
          return reply.type("text/markdown; charset=utf-8").send(reportMarkdown(report));
        },
      );
    }
  };
}
