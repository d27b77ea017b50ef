import type { FastifyPluginAsync } from "fastify";
import { HealthResponse, ReadyResponse, ServiceHealth, subjects } from "@litrev/contracts";
import type { GatewayDeps } from "../deps";

/**
 * Readiness is public, so it says only what an operator needs to know where to look: fixed short
 * messages, never a connection URL (it may carry credentials) or a raw error from a database or
 * provider (they may carry hosts, users or keys). The services log the details.
 *
 * `/health` is liveness only; `/health/ready` checks the database (as services report it), the
 * provider key and NATS, and names any configured model the provider does not offer (`models`).
 */
export function healthRoutes(deps: GatewayDeps): FastifyPluginAsync {
  return async (app) => {
    app.get("/health", { schema: { tags: ["health"], response: { 200: HealthResponse } } }, async () => ({ status: "ok" }));

    app.get(
      "/health/ready",
      { schema: { tags: ["health"], response: { 200: ReadyResponse, 503: ReadyResponse } } },
      async (_request, reply) => {
        const checks: Record<string, string> = {
          database: "error: unknown (messaging unavailable)",
          openai_key: deps.env.OPENAI_API_KEY ? "configured" : "missing",
          nats: deps.link.connected ? "ok" : "error: not connected",
        };
        if (deps.link.connected) Object.assign(checks, await serviceChecks(deps));
        const ready = checks.database === "ok" && checks.openai_key === "configured" && checks.nats === "ok";
        return reply.status(ready ? 200 : 503).send({ status: ready ? "ready" : "degraded", checks });
      },
    );
  };
}

/**
 * Asks every service instance for its status (a broadcast, no queue group) and folds the answers
 * into the `database` check plus one informational `service:<name>` entry per service.
 */
async function serviceChecks(deps: GatewayDeps): Promise<Record<string, string>> {
  const replies: ServiceHealth[] = [];
  try {
    const nc = deps.link.connection();
    const answers = await nc.requestMany(subjects.health(), "", { strategy: "timer", maxWait: deps.env.READY_WAIT_MS });
    for await (const msg of answers) {
      const parsed = ServiceHealth.safeParse(safeJson(msg.string()));
      if (parsed.success) replies.push(parsed.data);
    }
  } catch {
    // No service answered in time (or none is running): reported below.
  }
  const checks: Record<string, string> = {};
  const instances = new Map<string, number>();
  for (const reply of replies) instances.set(reply.service, (instances.get(reply.service) ?? 0) + 1);
  for (const [service, count] of instances) checks[`service:${service}`] = `ok (${count} instance${count > 1 ? "s" : ""})`;
  // Which store of record each job service keeps its jobs in (informational).
  for (const reply of replies) if (reply.store) checks[`store:${reply.service}`] = reply.store;
  // What the service's forecast assumes of the provider's `n` (informational).
  for (const reply of replies) if (reply.provider_n) checks[`provider_n:${reply.service}`] = reply.provider_n;

  const failing = replies.find((r) => r.database.startsWith("error"));
  const usingDb = replies.filter((r) => r.database !== "not_used");
  if (failing) checks.database = `${publicDatabaseStatus(failing.database)} (${failing.service})`;
  else if (usingDb.length > 0) checks.database = "ok";
  else checks.database = "error: no database-backed service answered";

  // Informational (it does not make the gateway degraded): a model the provider lacks fails only
  // the requests that use it, and the fix is a configuration change, not a restart.
  const missing = replies.filter((r) => r.models !== undefined && !r.models.startsWith("ok"));
  const checked = replies.filter((r) => r.models !== undefined);
  if (missing.length > 0) {
    checks.models = [...new Set(missing.map((r) => `${publicModelsStatus(r.models!)} (${r.service})`))].join("; ").slice(0, 2000);
  } else if (checked.length > 0) {
    checks.models = "ok";
  }
  return checks;
}

/** A service's database status as readiness shows it: one of a few fixed messages. */
function publicDatabaseStatus(status: string): string {
  if (!status.startsWith("error")) return status === "ok" || status === "not_used" ? status : "error: unknown status";
  if (/not connected yet/.test(status)) return "error: database not connected yet";
  if (/waiting for the job store/.test(status)) return "error: writes waiting for the job store";
  // Reached but refused (credentials, an index conflict, a malformed URL): not "unreachable".
  if (/initialisation failed/.test(status) && !/unreachable/.test(status)) return "error: database could not be initialised (see the service's log)";
  return "error: database unreachable";
}

/**
 * A service's model check as readiness shows it: the names of configured models the provider
 * lacks (configuration, not secrets) are kept; a failure to ask the provider is one fixed message.
 */
function publicModelsStatus(status: string): string {
  if (status.startsWith("missing:") || status.startsWith("shutting down:")) return status;
  if (status.startsWith("error")) return "error: could not list the provider's models";
  return status.startsWith("ok") ? status : "error: unknown status";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
