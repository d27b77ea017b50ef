import { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import {
  headers,
  isJobId,
  JobIdParams,
  operations,
  jobNotFound,
  ValidationSample,
  ValidationSampleDownloadQuery,
  ValidationSampleParams,
  ScreeningValidationRequest,
  ScreeningValidationResponse,
  ServiceError,
  type ValidationIssue,
} from "@litrev/contracts";
import { z } from "zod";
import { jobPaperOf, LabelError, thresholdOf, type JobPaper } from "@litrev/evaluation";
import { sampleDownload } from "@litrev/jobs/client";
import { callOperation } from "@litrev/messaging";
import type { GatewayDeps } from "../deps";
import type { OffLoopParser } from "../off-loop-parse";
import type { JobPolls } from "./job-polls";
import { ownerOf } from "./owner";

/** Labels named one by one in a 400 (the rest are counted in a last issue). */
const NAMED_LABELS = 50;

/**
 * `POST /v1/screening/jobs/{job_id}/validation` (and without `/v1`): the job's figures on the
 * team's labelled sample (libs/evaluation computes them, as `pnpm eval` does). The job is read
 * by the gateway's poll reader for the caller's owner, so the same key sees the same job:
 * another client's job or an unknown one is a 404 exactly as its poll is; its papers are streamed
 * from the job's artifact, keeping only each one's id, include votes and decision. The figures are
 * computed on the gateway's worker thread (`OffLoopParser.validate`), never on its event loop.
 */
export function validationRoutes(deps: GatewayDeps, polls: JobPolls, offLoop: OffLoopParser): FastifyPluginAsync {
  return async (untyped) => {
    const app = untyped.withTypeProvider<ZodTypeProvider>();
    app.get(
      "/v1/screening/jobs/:job_id/validation-samples/:sample_id/download",
      {
        schema: {
          params: ValidationSampleParams,
          querystring: ValidationSampleDownloadQuery,
          response: {
            200: {
              description: "The sample's papers in the order to screen them, with titles and abstracts and nothing of the model's (blind screening)",
              content: { "text/csv": { schema: z.string() }, "application/x-research-info-systems": { schema: z.string() } },
            },
          },
        },
      },
      async (request: FastifyRequest<{ Params: z.infer<typeof ValidationSampleParams>; Querystring: z.infer<typeof ValidationSampleDownloadQuery> }>, reply: FastifyReply) => {
        const { format, csv } = request.query;
        const { job_id, sample_id } = request.params;
        if (!isJobId(job_id)) throw jobNotFound();
        // The sample under the caller's owner (another's: 404), then its papers' texts from the job's artifact.
        const asked = { requestId: request.id, timeoutMs: deps.env.READ_TIMEOUT_MS, headers: { [headers.owner]: ownerOf(request) } };
        const sample = ValidationSample.parse(await callOperation(deps.link, operations.getValidationSample, request.params, asked));
        const finished = await polls.finished("screening", job_id, ownerOf(request), request.id);
        if (!finished.artifact.head.titles) {
          throw new ServiceError("conflict", `Job ${job_id} no longer holds its papers' titles and abstracts (they are kept with its results, in its finished artifact); download the sample's ids from GET …/validation-samples/${sample_id}`, { simple: true });
        }
        // Streamed as it is produced, a window of the sample's texts at a time (never whole in memory).
        const body = Readable.from(sampleDownload(finished.job(), sample.paper_ids, format, csv), { objectMode: false, highWaterMark: 1 });
        return reply
          .type(format === "csv" ? "text/csv; charset=utf-8" : "application/x-research-info-systems; charset=utf-8")
          .header("content-disposition", `attachment; filename="validation-sample-${sample.sample_id}.${format}"`)
          .send(body);
      },
    );

    app.post(
      "/v1/screening/jobs/:job_id/validation",
      { schema: { params: JobIdParams, body: ScreeningValidationRequest, response: { 200: ScreeningValidationResponse } } },
      async (request) => {
        const { job_id } = request.params;
        if (!isJobId(job_id)) throw jobNotFound();
        const body = request.body;
        const poll = await polls.read("screening", job_id, ownerOf(request), request.id);
        const status = poll.finished ? poll.artifact.head.status : poll.status;
        if (!poll.finished || status !== "completed") {
          const message = status === "failed" ? "The job failed: only a completed job can be validated" : `The job is ${status}: it can be validated once it has completed`;
          throw new ServiceError("conflict", message, { simple: true });
        }
        // Only what the validation reads of each paper, chunk by chunk: the job is never held whole.
        const job = poll.job();
        const papers: JobPaper[] = [];
        for await (const chunk of job.chunks()) {
          for (const { id, final_score, decision } of chunk) if (typeof id === "string" || typeof id === "number") papers.push(jobPaperOf({ id, final_score, decision }));
        }
        try {
          // Off the event loop: the exact bounds of a large job take up to a second of CPU.
          return await offLoop.validate({
            jobId: job_id,
            papers,
            repetitions: integerOr(job.record.config.repetitions, 0),
            jobThreshold: thresholdOf(job.record.config),
            labels: body.labels,
            targetRecall: body.target_recall,
            confidence: body.confidence,
            sides: body.sides,
            design: body.design,
          });
        } catch (error) {
          if (error instanceof LabelError) throw new ServiceError("validation", "Request validation failed", { issues: labelIssues(error) });
          throw error;
        }
      },
    );
  };
}

function labelIssues(error: LabelError): ValidationIssue[] {
  const msg = error.kind === "unknown" ? "Not a paper of this job" : "Labelled more than once";
  const type = error.kind === "unknown" ? "unknown_id" : "duplicate_id";
  const named: ValidationIssue[] = error.labels.slice(0, NAMED_LABELS).map(({ index, id }) => ({ type, loc: ["body", "labels", index, "id"], msg: `${msg}: ${id}` }));
  if (error.labels.length > NAMED_LABELS) named.push({ type, loc: ["body", "labels"], msg: `and ${error.labels.length - NAMED_LABELS} more labels like these` });
  return named;
}

function integerOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isInteger(value) ? value : fallback;
}
