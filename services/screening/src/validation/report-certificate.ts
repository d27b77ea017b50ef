import { operations, type JobReport, type ReportCertificate } from "@litrev/contracts";
import { requestOwner } from "@litrev/jobs";
import type { HandlerEntry, OperationHandler } from "@litrev/messaging";
import type { SampleStore, StoredSample } from "./sample-store";

/**
 * The screening report handler with the job's latest recall certificate added: the look most
 * recently taken on any of the owner's samples of the job (null when none was labelled).
 */
export function withRecallCertificate(entries: HandlerEntry[], store: SampleStore): HandlerEntry[] {
  return entries.map((entry) => {
    if (entry.operation !== operations.reportScreeningJob) return entry;
    const handle: OperationHandler = async (input, ctx) => {
      const report = (await entry.handle(input, ctx)) as JobReport;
      const samples = await store.labelledSamples(report.job_id, requestOwner(ctx.header));
      return { ...report, recall_certificate: latest(samples) };
    };
    return { ...entry, handle };
  });
}

function latest(samples: readonly StoredSample[]): ReportCertificate | null {
  let best: StoredSample | null = null;
  for (const s of samples) if (!best || s.sample.looks.at(-1)!.at > best.sample.looks.at(-1)!.at) best = s;
  if (!best) return null;
  const { sample } = best;
  const cert = sample.certificate;
  return {
    sample_id: sample.sample_id,
    design: sample.design,
    sample_size: sample.paper_ids.length,
    labelled: cert.labelled,
    labelled_included: cert.labelled_included,
    threshold: cert.recommended?.votes ?? null,
    recall_lower: cert.recommended?.recall_lower ?? null,
    statement: cert.statement,
    method: cert.method,
    at: sample.looks.at(-1)!.at,
  };
}
