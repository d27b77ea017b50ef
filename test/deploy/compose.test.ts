import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, ROOT, SERVICES, documentedNames, envFile, exists, isService, loadYaml, read, renderCompose, serviceOfImage, type Doc } from "./manifests";

/**
 * deploy/compose.yaml rendered as `docker compose config` would (merge keys resolved, variables
 * interpolated from deploy/.env.example with every secret filled in, as an operator would), then
 * checked against the repository.
 */

const COMPOSE = join(DEPLOY, "compose.yaml");
const example = envFile(join(DEPLOY, ".env.example"));
const filled = Object.fromEntries(Object.entries(example).map(([name, value]) => [name, value || `example-${name.toLowerCase()}`]));
const compose = renderCompose(COMPOSE, filled);
const services: Record<string, Doc> = compose.services;
const env = (name: string): Record<string, string> => services[name].environment ?? {};
const hostOf = (url: string) => new URL(url).hostname;

describe("deploy/compose.yaml", () => {
  it("builds each of the four services from deploy/Dockerfile with its SERVICE, as litrev/<service>", () => {
    for (const service of SERVICES) {
      const def = services[service];
      expect(def, service).toBeDefined();
      const context = resolve(DEPLOY, def.build.context);
      expect(context).toBe(ROOT);
      expect(exists(join(context, def.build.dockerfile))).toBe(true);
      expect(def.build.args.SERVICE).toBe(service);
      expect(serviceOfImage(def.image)).toBe(service);
      expect(exists(join(ROOT, "services", service, "src/main.ts")), `services/${service}/src/main.ts`).toBe(true);
    }
  });

  it("renders with every variable it needs in deploy/.env.example; a missing secret stops it, naming the variable", () => {
    const raw = read(COMPOSE);
    // Every required variable (`${NAME:?…}`) is in the example file an operator copies.
    for (const [, name] of raw.matchAll(/\$\{(\w+):\?/g)) expect(example, `${name} in deploy/.env.example`).toHaveProperty(name!);
    expect(JSON.stringify(compose)).not.toMatch(/\$\{/);
    expect(() => renderCompose(COMPOSE, { ...filled, MONGO_SCREENING_PASSWORD: "" })).toThrow(/MONGO_SCREENING_PASSWORD is required/);
  });

  it("lets every service scale with --scale: no container_name, no host port; a reverse proxy publishes the API", () => {
    for (const service of SERVICES) {
      expect(services[service].container_name, service).toBeUndefined();
      expect(services[service].ports, service).toBeUndefined();
    }
    expect(env("gateway").PORT).toBe("8000");
    const proxy = services.proxy;
    expect(proxy.image).toMatch(/^nginx:/);
    expect(proxy.ports).toEqual([`${example.GATEWAY_PORT}:8000`]);
    const config = read(resolve(DEPLOY, (proxy.volumes as string[])[0]!.split(":")[0]!));
    // Every gateway replica, resolved again as replicas come and go; event streams neither buffered nor cut.
    expect(config).toMatch(/resolver 127\.0\.0\.11/);
    expect(config).toMatch(/set \$gateway http:\/\/gateway:8000;/);
    expect(config).toMatch(/proxy_buffering off;/);
    expect(config).toMatch(/proxy_read_timeout 1h;/);
    expect(config).toMatch(/listen 8000;/);
  });

  it("sets a memory limit on every container", () => {
    for (const [name, def] of Object.entries(services)) expect(def.deploy?.resources?.limits?.memory, name).toMatch(/^\d+[MG]$/);
  });

  it("mounts only files that exist, and every depends_on names a defined service", () => {
    for (const [name, def] of Object.entries(services)) {
      for (const volume of (def.volumes ?? []) as string[]) {
        const source = volume.split(":")[0]!;
        if (source.startsWith(".")) expect(exists(resolve(DEPLOY, source)), `${name}: ${source}`).toBe(true);
        else expect(compose.volumes, `${name}: named volume ${source}`).toHaveProperty(source);
      }
      const deps = Array.isArray(def.depends_on) ? def.depends_on : Object.keys(def.depends_on ?? {});
      for (const dep of deps) expect(services, `${name} depends_on ${dep}`).toHaveProperty(dep);
    }
  });

  it("runs NATS with JetStream on file storage and sync_interval: always", () => {
    const nats = services.nats;
    const config = (nats.command as string[])[(nats.command as string[]).indexOf("-c") + 1]!;
    const mount = (nats.volumes as string[]).find((v) => v.split(":")[1] === config)!;
    const conf = read(resolve(DEPLOY, mount.split(":")[0]!));
    const jetstream = /jetstream\s*\{([^}]*)\}/.exec(conf)?.[1] ?? "";
    expect(jetstream).toMatch(/^\s*store_dir:\s*\/data\//m);
    expect(jetstream).toMatch(/^\s*sync_interval:\s*always\s*$/m);
    // The store directory is on the named volume, so it survives container replacement.
    expect((nats.volumes as string[]).some((v) => v.endsWith(":/data") && !v.startsWith("."))).toBe(true);
  });

  it("runs MongoDB as a single-node replica set with authentication and TLS, initiated before the services start", () => {
    const mongo = services.mongo;
    expect(mongo.command).toContain("--replSet=rs0");
    expect(mongo.command).toContain("--tlsMode=requireTLS");
    expect((mongo.command as string[]).some((a) => a.startsWith("--keyFile="))).toBe(true);
    expect(mongo.environment.MONGO_INITDB_ROOT_PASSWORD).toBe(filled.MONGO_ROOT_PASSWORD);
    const init = services["mongo-init"];
    const script = (init.volumes as string[])[0]!.split(":")[0]!;
    expect(read(resolve(DEPLOY, script))).toMatch(/rs\.initiate\(\{ _id: "rs0"/);
    expect(init.command.join(" ")).toContain("--tls");
    for (const service of SERVICES) {
      // The gateway holds no database credentials (it learns the database status from the services)
      // and does not wait for the database: it serves, degraded, meanwhile. Criteria stores nothing.
      if (service === "gateway" || service === "criteria") {
        expect(env(service).MONGO_URL).toBeUndefined();
        expect(services[service].depends_on).not.toHaveProperty("mongo-init");
        continue;
      }
      expect(services[service].depends_on["mongo-init"].condition).toBe("service_completed_successfully");
      const url = env(service).MONGO_URL!;
      // Its own user, whose password mongo-init sets from the same URL.
      expect(url).toBe(init.environment[`MONGO_${service.toUpperCase()}_URL`]);
      expect(url).toContain(`mongodb://${service}:${filled[`MONGO_${service.toUpperCase()}_PASSWORD`]}@`);
      const parsed = new URL(url);
      expect(parsed.searchParams.get("replicaSet")).toBe("rs0");
      expect(parsed.searchParams.get("authSource")).toBe(parsed.pathname.slice(1));
      expect(parsed.searchParams.get("tls")).toBe("true");
      const ca = parsed.searchParams.get("tlsCAFile")!;
      expect((services[service].volumes as string[]).some((v) => ca.startsWith(`${v.split(":")[1]}/`)), `${service}: ${ca} mounted`).toBe(true);
      expect(services).toHaveProperty(parsed.hostname);
    }
  });

  it("configures every service through the documented variables, secrets only where needed", () => {
    const documented = documentedNames();
    for (const service of SERVICES) {
      const vars = env(service);
      for (const name of ["NATS_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LOG_LEVEL", "OTEL_EXPORTER_OTLP_ENDPOINT", "METRICS_PORT", "NATS_REPLICAS"]) {
        expect(vars, `${service}.${name}`).toHaveProperty(name);
      }
      for (const name of Object.keys(vars)) expect(documented.has(name), `${name} in docs/operations.md`).toBe(true);
      expect(services).toHaveProperty(hostOf(vars.NATS_URL!));
      expect(services).toHaveProperty(hostOf(vars.OTEL_EXPORTER_OTLP_ENDPOINT!));
      // The job-command key only where job commands are sealed or opened; the service key only at the edge.
      expect("JOB_KEY_SECRET" in vars, `${service} JOB_KEY_SECRET`).toBe(["gateway", "screening", "indexer", "criteria"].includes(service));
      expect("API_KEY" in vars, `${service} API_KEY`).toBe(service === "gateway");
    }
    // Required secrets fail fast instead of starting with an empty key.
    const raw = loadYaml(COMPOSE);
    expect(raw.services.gateway.environment.API_KEY).toMatch(/^\$\{API_KEY:\?/);
    expect(raw.services.gateway.environment.JOB_KEY_SECRET).toMatch(/^\$\{JOB_KEY_SECRET:\?/);
    for (const name of ["API_KEY", "JOB_KEY_SECRET", "OPENAI_API_KEY", "OPENAI_BASE_URL"]) expect(example).toHaveProperty(name);
  });

  it("wires the OpenTelemetry collector: OTLP in, traces to Jaeger, metrics out", () => {
    const collector = services["otel-collector"];
    const configPath = (collector.command as string[])[0]!.replace("--config=", "");
    const mount = (collector.volumes as string[]).find((v) => v.split(":")[1] === configPath)!;
    const config = loadYaml(resolve(DEPLOY, mount.split(":")[0]!));
    for (const [name, pipeline] of Object.entries(config.service.pipelines as Record<string, Doc>)) {
      for (const r of pipeline.receivers) expect(config.receivers, `${name} receiver ${r}`).toHaveProperty(r);
      for (const p of pipeline.processors) expect(config.processors, `${name} processor ${p}`).toHaveProperty(p);
      for (const e of pipeline.exporters) expect(config.exporters, `${name} exporter ${e}`).toHaveProperty(e);
    }
    const traceExporter = config.exporters[config.service.pipelines.traces.exporters[0]];
    expect(services).toHaveProperty(traceExporter.endpoint.split(":")[0]);
    expect(config.receivers.otlp.protocols.http.endpoint).toMatch(/:4318$/);
    expect(new URL(env("gateway").OTEL_EXPORTER_OTLP_ENDPOINT!).port).toBe("4318");
  });

  it("names no unknown service in build args", () => {
    for (const def of Object.values(services)) if (def.build) expect(isService(def.build.args.SERVICE)).toBe(true);
  });
});
