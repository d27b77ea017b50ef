/**
 * Container health check: `node dist/healthcheck.js` in the image's working directory (Docker
 * HEALTHCHECK), compiled from this file by scripts/build.ts. It imports nothing but Node's own
 * modules, so it starts in milliseconds every few seconds.
 *
 * - gateway: GET /health on PORT — the process accepts and answers HTTP.
 * - other services: GET /metrics on METRICS_PORT — the event loop is free enough to answer a
 *   scrape; without METRICS_PORT, a TCP connect to the first NATS server, without which a
 *   service cannot do anything.
 * Exit 0 = healthy, 1 = unhealthy; the one line printed is what `docker inspect` shows.
 */
import { connect } from "node:net";

const timeoutMs = Number(process.env.HEALTHCHECK_TIMEOUT_MS) || 3_000;
const service = process.env.SERVICE ?? "";

async function httpOk(url: string): Promise<string | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok ? undefined : `${url} answered ${response.status}`;
  } catch (error) {
    // fetch hides the socket error (ECONNREFUSED, …) in `cause`.
    const { message, cause } = error as Error & { cause?: Error };
    return `${url}: ${cause?.message ?? message}`;
  }
}

function tcpOk(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once("connect", () => (socket.destroy(), resolve(undefined)));
    socket.once("timeout", () => (socket.destroy(), resolve(`${host}:${port}: timed out`)));
    socket.once("error", (error) => resolve(`${host}:${port}: ${error.message}`));
  });
}

async function check(): Promise<string | undefined> {
  if (service === "gateway") return httpOk(`http://127.0.0.1:${process.env.PORT || 8000}/health`);
  if (process.env.METRICS_PORT) return httpOk(`http://127.0.0.1:${process.env.METRICS_PORT}/metrics`);
  const first = (process.env.NATS_URL || "nats://127.0.0.1:4222").split(",")[0]!.trim();
  const url = new URL(first.includes("://") ? first : `nats://${first}`);
  return tcpOk(url.hostname, Number(url.port) || 4222);
}

const problem = await check();
console.log(problem ? `unhealthy: ${problem}` : `healthy (${service || "service"})`);
process.exit(problem ? 1 : 0);
