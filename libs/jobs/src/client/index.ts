/**
 * The client side of the job machinery: what the gateway and a service's request handlers use
 * (admission, reads, the live-state mirror, key sealing). It never loads the worker or a database
 * driver: the gateway imports only this entry point.
 */
export { admitJob, reapOrphans } from "./admission";
export type { AdmitRequest, AdmitResult, ProjectConflict } from "./admission";
export { JobMirror, MIRROR_STALENESS_MS } from "./mirror";
export type { MirrorEntry, MirrorListener } from "./mirror";
export { PartialReader } from "./partial-reader";
export { JobReader } from "./reader";
export { csvCell, csvRow } from "./csv";
export { exportBody } from "./exports";
export { sampleDownload } from "./sample-download";
export type { SampleFormat } from "./sample-download";
export type { FinishedJob } from "../finished/finished-job";
export { buildReport, OutcomeCounter, reportMarkdown } from "../finished/report";
export type { PromptInstructions } from "../finished/report";
export { completeReport, methodsParagraph, checklist } from "../finished/methods-text";
export { ArtifactWriter, artifactJob, pollFrame, pollPieces, readArtifactHead } from "../artifact";
export { FinishedArtifacts } from "./finished-artifacts";
export { RecallCertificates } from "./recall-certificates";
export type { SampleMarks } from "./sample-marks";
export type { FinishedArtifact } from "./finished-artifacts";
export type { JobRecord, JobResults } from "../finished/views";
export type { PartialRecord } from "@litrev/contracts";
export { JobData, JsonLines, LinesWriter } from "../data";
export { eraseJobData } from "../erase";
export { putListInput, stagedList } from "../list-input";
export { JobKeySecretEnv, KeySealer, keyBindings, MIN_SECRET_LENGTH, withJobKeySecrets } from "../key-sealer";
export type { KeyBinding } from "../key-sealer";
export { applyProgress, closeStage, durationMs, isActive, newJobState, ownedBy } from "../state";
export type { NewJobState, ProgressReport } from "../state";
export { NoJobStore, toStoredJob } from "../store/job-store";
export type { JobStore, JsonRecord, StoredJob, UpsertOutcome } from "../store/job-store";
export { admissionJobId, creatorOf, jobProviderKey, projectConflictMessage, requestOwner } from "./ownership";
