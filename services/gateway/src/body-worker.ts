import { parentPort, workerData } from "node:worker_threads";
import { forwardedRoutes, parseOrIssues, requestLimitIssues, type RequestLimits, type ScreeningValidationResponse, type ValidationIssue } from "@litrev/contracts";
import { LabelError, validateJob, type ValidationInput } from "@litrev/evaluation";

/** A large body's work off the gateway's event loop: parsed, held to the configured limits, validated. */
export type OffLoopResult = { kind: "invalid-json" } | { kind: "issues"; issues: ValidationIssue[] } | { kind: "valid"; json: string };
export interface OffLoopRequest {
  id: number;
  operation: string;
  bytes: Uint8Array;
}

/** A job's validation on a labelled sample, computed off the loop (its exact bounds can take a second on a large job). */
export type ValidationResult =
  | { kind: "validated"; response: ScreeningValidationResponse }
  | { kind: "labels"; labelKind: LabelError["kind"]; labels: LabelError["labels"] }
  | { kind: "failed"; message: string };
export interface ValidationRequest {
  id: number;
  validate: ValidationInput;
}

const limits = workerData as RequestLimits;
const decoder = new TextDecoder();
/** The forwarded routes by name (this thread knows the kinds registered when it started). */
const routes = new Map(forwardedRoutes().map((route) => [route.key, route]));

function work({ operation, bytes }: OffLoopRequest): OffLoopResult {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(bytes));
  } catch {
    return { kind: "invalid-json" };
  }
  // In the route's order: the configured limits on the raw body, then the contract.
  const route = routes.get(operation);
  const limited = requestLimitIssues(operation, body, limits);
  if (limited.length > 0) return { kind: "issues", issues: limited };
  const schema = route ? (route.body ?? route.operation.request) : undefined;
  if (!schema) return { kind: "issues", issues: [] };
  const checked = parseOrIssues(schema, body, "body");
  // Sent back as JSON text: the validated value is far smaller than the body (unknown keys stripped).
  return checked.success ? { kind: "valid", json: JSON.stringify(checked.data) } : { kind: "issues", issues: checked.issues };
}

function validate(input: ValidationInput): ValidationResult {
  try {
    return { kind: "validated", response: validateJob(input) };
  } catch (error) {
    if (error instanceof LabelError) return { kind: "labels", labelKind: error.kind, labels: error.labels };
    return { kind: "failed", message: error instanceof Error ? error.message : String(error) };
  }
}

parentPort?.on("message", (request: OffLoopRequest | ValidationRequest) => {
  if ("validate" in request) {
    parentPort!.postMessage({ id: request.id, result: validate(request.validate) });
    return;
  }
  let result: OffLoopResult;
  try {
    result = work(request);
  } catch {
    result = { kind: "invalid-json" };
  }
  parentPort!.postMessage({ id: request.id, result });
});
