import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, ROOT, SERVICES, documentedNames, exists, isService, loadYaml, read, serviceOfImage, type Doc } from "./manifests";

/** deploy/compose.yaml read as `docker compose` would (merge keys resolved), checked against the repository. */

const compose = loadYaml(join(DEPLOY, "compose.yaml"));
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

  it("lets every service scale with --scale: no container_name, no host port except the gateway's", () => {
    for (const service of SERVICES) {
      expect(services[service].container_name, service).toBeUndefined();
      if (service !== "gateway") expect(services[service].ports, service).toBeUndefined();
    }
    const [published] = services.gateway.ports as string[];
    // A host port range: each gateway replica takes the next free port of it.
    expect(published).toMatch(/^\$\{GATEWAY_PORTS:-\d+-\d+\}:8000$/);
    expect(env("gateway").PORT).toBe("8000");
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

  it("runs MongoDB as a single-node replica set, initiated before the services start", () => {
    expect(services.mongo.command).toEqual(expect.arrayContaining(["--replSet", "rs0"]));
    const init = services["mongo-init"];
    const script = (init.volumes as string[])[0]!.split(":")[0]!;
    expect(read(resolve(DEPLOY, script))).toMatch(/rs\.initiate\(\{ _id: "rs0"/);
    for (const service of SERVICES) {
      // The gateway holds no database credentials (it learns the database status from the services)
      // and does not wait for the database: it serves, degraded, meanwhile.
      if (service === "gateway") {
        expect(env(service).MONGO_URL).toBeUndefined();
        expect(services[service].depends_on).not.toHaveProperty("mongo-init");
        continue;
      }
      expect(services[service].depends_on["mongo-init"].condition).toBe("service_completed_successfully");
      const url = new URL(env(service).MONGO_URL!);
      expect(url.searchParams.get("replicaSet")).toBe("rs0");
      expect(services).toHaveProperty(url.hostname);
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
    expect(env("gateway").API_KEY).toMatch(/^\$\{API_KEY:\?/);
    expect(env("gateway").JOB_KEY_SECRET).toMatch(/^\$\{JOB_KEY_SECRET:\?/);
    const example = read(join(DEPLOY, ".env.example"));
    for (const name of ["API_KEY", "JOB_KEY_SECRET", "OPENAI_API_KEY", "OPENAI_BASE_URL"]) expect(example).toMatch(new RegExp(`^${name}=`, "m"));
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
