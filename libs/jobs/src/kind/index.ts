/** Job kinds: one declaration per kind, from which admission, reads, the worker and the cost meter come. */
export { CostCeilingExceeded, CostMeter } from "./cost-meter";
export { defineJobKind } from "./define";
export type { AdmissionFacts, JobKind, KindJob, KindRequest } from "./define";
export { admitKindJob, jobKindHandlers } from "./handlers";
export type { KindHandlerDeps } from "./handlers";
export { JobPricing } from "./pricing";
export type { AliasSource } from "./pricing";
export { serveJobKind } from "./serve";
export type { JobKindRuntime, ServedJobKind } from "./serve";
export { jobReportExtras } from "./report-extras";
