import type { FastifyPluginAsync } from "fastify";
import { HealthResponse, ReadyResponse, ServiceHealth, subjects } from "@litrev/contracts";
import type { GatewayDeps } from "../app";

/**
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
          nats: deps.link.connected ? "ok" : `error: not connected to ${deps.env.NATS_URL}`,
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

  const failing = replies.find((r) => r.database.startsWith("error"));
  const usingDb = replies.filter((r) => r.database !== "not_used");
  if (failing) checks.database = `${failing.database} (${failing.service})`;
  else if (usingDb.length > 0) checks.database = "ok";
  else checks.database = "error: no database-backed service answered";

  // Informational (it does not make the gateway degraded): a model the provider lacks fails only
  // the requests that use it, and the fix is a configuration change, not a restart.
  const missing = replies.filter((r) => r.models !== undefined && !r.models.startsWith("ok"));
  const checked = replies.filter((r) => r.models !== undefined);
  if (missing.length > 0) {
    checks.models = [...new Set(missing.map((r) => `${r.models} (${r.service})`))].join("; ").slice(0, 2000);
  } else if (checked.length > 0) {
    checks.models = "ok";
  }
  return checks;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
