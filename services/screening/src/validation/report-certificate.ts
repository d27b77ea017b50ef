import type { ReportCertificate } from "@litrev/contracts";
import type { StoredSample } from "./sample-store";

/** A labelled sample's certificate as the methods report cites it (the sample's newest look). */
export function reportCertificateOf({ sample }: StoredSample): ReportCertificate {
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
