import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { once } from "node:events";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { skipServerSpan } from "./sampling";
import { EXIT_CONFIG } from "./exit-codes";
import { metricReadersFromEnv } from "./sdk";

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

describe("metricReadersFromEnv", () => {
  it("has no reader by default, so metrics cost nothing and no port is opened", () => {
    expect(metricReadersFromEnv({})).toEqual([]);
  });

  it("leaves the choice to the SDK when OTEL_METRICS_EXPORTER is set", () => {
    expect(metricReadersFromEnv({ OTEL_METRICS_EXPORTER: "console", METRICS_PORT: "9464" })).toBeUndefined();
  });

  it("exports over OTLP next to the traces when an endpoint is set", async () => {
    const readers = metricReadersFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })!;
    expect(readers).toHaveLength(1);
    expect(readers[0]).toBeInstanceOf(PeriodicExportingMetricReader);
  });

  it("serves a Prometheus endpoint on METRICS_PORT and reports a port it cannot take", async () => {
    const port = await freePort();
    const readers = metricReadersFromEnv({ METRICS_PORT: String(port), METRICS_HOST: "127.0.0.1" })!;
    expect(readers).toHaveLength(1);
    const exporter = readers[0] as PrometheusExporter;
    expect(exporter).toBeInstanceOf(PrometheusExporter);
    await exporter.startServer();
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);

    const failures: number[] = [];
    const clash = metricReadersFromEnv({ METRICS_PORT: String(port), METRICS_HOST: "127.0.0.1" }, (_e, p) => failures.push(p))!;
    await expect((clash[0] as PrometheusExporter).startServer()).rejects.toThrow(/EADDRINUSE/);
    expect(failures).toEqual([port]);
    await exporter.stopServer();
  });
});

describe("invalid telemetry settings", () => {
  it("are refused, naming the variable, rather than leaving metrics quietly off", () => {
    for (const METRICS_PORT of ["nine", "0", "70000", "94.5"]) {
      expect(() => metricReadersFromEnv({ METRICS_PORT })).toThrow(/METRICS_PORT/);
    }
    expect(() => metricReadersFromEnv({ OTEL_METRIC_EXPORT_INTERVAL: "soon" })).toThrow(/OTEL_METRIC_EXPORT_INTERVAL/);
  });

  it("stop a process at start-up with the configuration exit code", () => {
    const register = fileURLToPath(new URL("./register.ts", import.meta.url));
    const bad = spawnSync(process.execPath, ["--import", "tsx", "--import", register, "-e", ""], {
      env: { ...process.env, METRICS_PORT: "metrics" },
      encoding: "utf8",
      timeout: 50_000,
    });
    expect(bad.status).toBe(EXIT_CONFIG);
    expect(bad.stderr).toMatch(/METRICS_PORT/);
  }, 60_000);
});

describe("the metrics listener", () => {
  it("listens on loopback only unless METRICS_HOST says otherwise", async () => {
    const port = await freePort();
    const exporter = metricReadersFromEnv({ METRICS_PORT: String(port) })![0] as PrometheusExporter;
    await exporter.startServer();
    try {
      const server = (exporter as unknown as { _server: import("node:http").Server })._server;
      expect(server.address()).toMatchObject({ address: "127.0.0.1", port });
    } finally {
      await exporter.stopServer();
    }
  });
});

describe("skipServerSpan", () => {
  const never = () => 0.999;
  const always = () => 0;

  it("never traces probes and scrapes", () => {
    for (const url of ["/health", "/health/ready", "/metrics"]) expect(skipServerSpan("GET", url, 1, always)).toBe(true);
  });

  it("samples job polls and active-job reads at the configured ratio", () => {
    for (const url of ["/v1/screening/jobs/abc", "/indexer/jobs/abc?x=1", "/v1/screening/active-job?project_id=3"]) {
      expect(skipServerSpan("GET", url, 0.01, never)).toBe(true);
      expect(skipServerSpan("GET", url, 0.01, always)).toBe(false);
    }
  });

  it("traces every other request, job creation and listings included", () => {
    for (const [method, url] of [["POST", "/v1/screening/jobs"], ["GET", "/v1/screening/jobs?limit=5"], ["POST", "/v1/criteria/picos"]] as const) {
      expect(skipServerSpan(method, url, 0, never)).toBe(false);
    }
  });
});
