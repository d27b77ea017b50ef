import { parentPort, workerData } from "node:worker_threads";
import { forwardedRoutes, parseOrIssues, requestLimitIssues, type RequestLimits, type ValidationIssue } from "@litrev/contracts";

/** A large body's work off the gateway's event loop: parsed, held to the configured limits, validated. */
export type OffLoopResult = { kind: "invalid-json" } | { kind: "issues"; issues: ValidationIssue[] } | { kind: "valid"; json: string };
export interface OffLoopRequest {
  id: number;
  operation: string;
  bytes: Uint8Array;
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

parentPort?.on("message", (request: OffLoopRequest) => {
  let result: OffLoopResult;
  try {
    result = work(request);
  } catch {
    result = { kind: "invalid-json" };
  }
  parentPort!.postMessage({ id: request.id, result });
});
