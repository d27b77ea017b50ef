import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { ExportQuery, isJobId, JobIdParams, jobKind, JobReport, ReportQuery, sampleNotFound, type ExportFormat, type JobService, jobNotFound, jsonRecord } from "@litrev/contracts";
import { completeReport, exportBody, reportMarkdown, type RecallCertificates } from "@litrev/jobs/client";
import type { ZodApp } from "../validation";
import { ownerOf } from "./owner";
import type { JobPolls } from "./job-polls";

const CONTENT_TYPE: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  jsonl: "application/x-ndjson; charset=utf-8",
  ris: "application/x-research-info-systems; charset=utf-8",
};
const EXPORT_DESCRIPTION =
  "The job's results, one row (CSV, with a header row), one JSON object (JSON Lines) or one RIS record per paper or record, each with its title, streamed. " +
  "A failed or cancelled job exports the items that finished, marked partial (header `x-litrev-partial: true`, `partial` in the file name).";

/** Marks the export of a job that did not complete: its items are those that finished. */
const PARTIAL_HEADER = "x-litrev-partial";


/**
 * Exports and methods reports of finished jobs, read by this gateway from the job's artifact (no
 * request to the owning service): an export is produced chunk by chunk as the artifact's items are
 * read, its first bytes leaving before the last chunk is read, so no process holds it whole; the
 * report was built by the worker that ended the job and is read from the artifact's head. Same
 * ownership and 404 rules as a poll; a job that has not finished is a 409; a failed one exports
 * what finished, marked partial.
 */
export function exportRoutes(app: ZodApp, polls: JobPolls, certificates: RecallCertificates): (service: JobService) => void {
  return (service) => {
    app.get(
      `/v1/${service}/jobs/:job_id/export`,
      {
        schema: {
          params: JobIdParams,
          // A kind may add to the common query (screening: a validation sample to mark).
          querystring: jobKind(service).schemas.exportQuery ?? ExportQuery,
          response: { 200: { description: EXPORT_DESCRIPTION, content: { "text/csv": { schema: z.string() }, "application/x-ndjson": { schema: z.string() }, "application/x-research-info-systems": { schema: z.string() } } } },
        },
      },
      async (request: FastifyRequest<{ Params: JobIdParams }>, reply: FastifyReply) => {
        const { job_id } = request.params;
        const { format, csv } = ExportQuery.parse(request.query);
        const sample = jsonRecord(request.query).sample;
        if (!isJobId(job_id)) throw jobNotFound();
        const owner = ownerOf(request);
        const finished = await polls.finished(service, job_id, owner, request.id);
        // The sample is read once, before the first byte, and held while the export streams (it is bounded).
        const marks = typeof sample !== "string" ? undefined : await certificates.sampleMarks(service, job_id, sample, owner);
        if (marks === null) throw sampleNotFound();
        const job = finished.job();
        // A failed (or cancelled) job exports what finished, marked so that the file is not taken for the whole.
        if (job.partial) reply.header(PARTIAL_HEADER, "true");
        // One piece (about 64 KiB of rows) read ahead of the socket. Pieces stay strings down to the
        // socket, which encodes each into memory freed once written: as Buffers they would be
        // garbage until V8 next collects, and a large export's would pile up in the meantime.
        const body = Readable.from(exportBody(service, job, format, csv, marks), { objectMode: true, highWaterMark: 1 });
        return reply
          .type(CONTENT_TYPE[format])
          .header("content-disposition", `attachment; filename="${service}-${job_id}${job.partial ? "-partial" : ""}.${format}"`)
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
        const { job_id } = request.params;
        const { format } = request.query;
        if (!isJobId(job_id)) throw jobNotFound();
        const owner = ownerOf(request);
        const written = (await polls.finished(service, job_id, owner, request.id)).artifact.head.report;
        // A certificate comes later than the artifact: the job's latest is read beside it, and the paragraph and checklist written with it.
        const report = completeReport(written, await certificates.latest(service, job_id, owner));
        if (format === "json") return reply.type("application/json; charset=utf-8").send(JSON.stringify(report));
        return reply.type("text/markdown; charset=utf-8").send(reportMarkdown(report));
      },
    );
  };
}
