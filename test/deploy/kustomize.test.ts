import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, ROOT, SERVICES, documentedNames, exists, loadYaml, loadYamlDocs, read, rel, serviceOfImage, walk, type Doc } from "./manifests";

/**
 * deploy/k8s checked the way kustomize would resolve it: every referenced file exists, and the
 * objects it would emit fit together (selectors, ports, HPA/PDB targets, config and secret names).
 */

const K8S = join(DEPLOY, "k8s");
const kustomizations = walk(K8S).filter((p) => p.endsWith("/kustomization.yaml"));

/** Every object a kustomization (and the ones it includes) emits, before transformations. */
function objects(dir: string): Doc[] {
  const k = loadYaml(join(dir, "kustomization.yaml"));
  return ((k.resources ?? []) as string[]).flatMap((entry) => {
    const path = resolve(dir, entry);
    return entry.endsWith(".yaml") ? loadYamlDocs(path) : objects(path);
  });
}

function generated(dir: string, field: "configMapGenerator" | "secretGenerator"): string[] {
  const k = loadYaml(join(dir, "kustomization.yaml"));
  const own = ((k[field] ?? []) as Doc[]).map((g) => g.name as string);
  const included = ((k.resources ?? []) as string[]).filter((e) => !e.endsWith(".yaml")).flatMap((e) => generated(resolve(dir, e), field));
  return [...own, ...included];
}

const base = objects(join(K8S, "base"));
const of = (kind: string) => base.filter((o) => o.kind === kind);
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("deploy/k8s", () => {
  it("references only files that exist (operator-supplied secrets: their template exists and git ignores them)", () => {
    expect(kustomizations.map(rel).sort()).toEqual(["deploy/k8s/base/kustomization.yaml", "deploy/k8s/mongodb/kustomization.yaml", "deploy/k8s/overlays/production/kustomization.yaml"]);
    for (const file of kustomizations) {
      const dir = dirname(file);
      const k = loadYaml(file);
      for (const entry of (k.resources ?? []) as string[]) {
        const path = resolve(dir, entry);
        expect(exists(entry.endsWith(".yaml") ? path : join(path, "kustomization.yaml")), `${rel(file)}: ${entry}`).toBe(true);
      }
      for (const patch of (k.patches ?? []) as Doc[]) if (patch.path) expect(exists(resolve(dir, patch.path))).toBe(true);
      for (const generator of [...(k.configMapGenerator ?? []), ...(k.secretGenerator ?? [])] as Doc[]) {
        for (const f of [...(generator.files ?? []), ...(generator.envs ?? [])] as string[]) {
          const path = resolve(dir, f.split("=").pop()!);
          if (exists(path)) continue;
          expect(exists(`${path}.example`), `${rel(path)}.example`).toBe(true);
          expect(read(join(dirname(path), ".gitignore")).split("\n")).toContain(f);
        }
      }
    }
  });

  it("has a Deployment, Service, autoscaling/v2 HPA and PDB for each of the four services", () => {
    for (const service of SERVICES) {
      const deployment = of("Deployment").find((d) => d.metadata.name === service);
      expect(deployment, service).toBeDefined();
      expect(deployment.spec.replicas, "the HPA owns the replica count").toBeUndefined();
      const labels = deployment.spec.template.metadata.labels;
      expect(matches(deployment.spec.selector.matchLabels, labels)).toBe(true);

      const svc = of("Service").find((s) => s.metadata.name === service);
      expect(matches(svc.spec.selector, labels), `${service} Service selector`).toBe(true);
      const container = deployment.spec.template.spec.containers[0];
      const portNames = (container.ports as Doc[]).map((p) => p.name);
      for (const port of svc.spec.ports as Doc[]) expect(portNames).toContain(port.targetPort);

      const hpa = base.find((o) => o.kind === "HorizontalPodAutoscaler" && o.spec.scaleTargetRef.name === service);
      expect(hpa.apiVersion).toBe("autoscaling/v2");
      expect(hpa.spec.scaleTargetRef).toMatchObject({ apiVersion: "apps/v1", kind: "Deployment" });
      expect(hpa.spec.metrics[0].resource.name).toBe("cpu");
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);

      const pdb = base.find((o) => o.kind === "PodDisruptionBudget" && matches(o.spec.selector.matchLabels, labels));
      expect(pdb?.apiVersion, `${service} PDB`).toBe("policy/v1");
    }
  });

  it("gives every container probes on declared ports, resource requests and a non-root, read-only sandbox", () => {
    for (const deployment of of("Deployment")) {
      const service = deployment.metadata.name as string;
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      expect(serviceOfImage(container.image)).toBe(service);
      const portNames = (container.ports as Doc[]).map((p) => p.name);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        expect(container[probe], `${service} ${probe}`).toBeDefined();
        expect(portNames, `${service} ${probe} port`).toContain(container[probe].httpGet.port);
      }
      // Gateway liveness and readiness on /health; /health/ready is 503 whenever degraded (docs/operations.md).
      if (service === "gateway") {
        expect(container.livenessProbe.httpGet.path).toBe("/health");
        expect(container.readinessProbe.httpGet.path).toBe("/health");
      } else {
        expect(container.livenessProbe.httpGet.path).toBe("/metrics");
      }
      expect(container.resources.requests.cpu).toBeDefined();
      expect(container.resources.requests.memory).toBeDefined();
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(container.volumeMounts.some((m: Doc) => m.mountPath === "/tmp")).toBe(true);
      // The pod outlives the process's own bounded shutdown (SHUTDOWN_TIMEOUT_MS).
      const config = loadYaml(join(K8S, "base/kustomization.yaml")).configMapGenerator[0].literals as string[];
      const shutdownMs = Number(config.find((l) => l.startsWith("SHUTDOWN_TIMEOUT_MS="))!.split("=")[1]);
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(shutdownMs);
      expect(Number(deployment.spec.template.metadata.annotations["prometheus.io/port"])).toBe(
        (container.ports as Doc[]).find((p) => p.name === "metrics").containerPort,
      );
    }
  });

  it("configures through one generated ConfigMap and one Secret whose keys are all documented", () => {
    const production = join(K8S, "overlays/production");
    const configMaps = generated(production, "configMapGenerator");
    const secrets = generated(production, "secretGenerator");
    const secretKeys = read(join(production, "secrets.env.example"))
      .split("\n")
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split("=")[0]!);
    const documented = documentedNames();
    for (const deployment of of("Deployment")) {
      const service = deployment.metadata.name as string;
      const container = deployment.spec.template.spec.containers[0];
      for (const from of container.envFrom as Doc[]) expect(configMaps).toContain(from.configMapRef.name);
      const names = (container.env as Doc[]).map((e) => e.name as string);
      for (const entry of container.env as Doc[]) {
        // The one literal: the job workers' V8 heap cap (flat memory at any job size).
        if (entry.name === "NODE_OPTIONS") {
          expect(["screening", "indexer"], `${service} NODE_OPTIONS`).toContain(service);
          expect(entry.value).toMatch(/--max-old-space-size=\d+/);
          continue;
        }
        const ref = entry.valueFrom?.secretKeyRef;
        expect(secrets).toContain(ref.name);
        expect(secretKeys).toContain(ref.key);
      }
      expect(names.includes("JOB_KEY_SECRET"), `${service} JOB_KEY_SECRET`).toBe(["gateway", "screening", "indexer", "criteria"].includes(service));
      expect(names.includes("API_KEY"), `${service} API_KEY`).toBe(service === "gateway");
      expect(names.includes("NODE_OPTIONS"), `${service} NODE_OPTIONS`).toBe(["screening", "indexer"].includes(service));
      expect(names.includes("MONGO_URL"), `${service} MONGO_URL`).toBe(service !== "gateway");
    }
    const literals = loadYaml(join(K8S, "base/kustomization.yaml")).configMapGenerator[0].literals as string[];
    for (const name of [...literals.map((l) => l.split("=")[0]!), ...secretKeys]) expect(documented.has(name), `${name} in docs/operations.md`).toBe(true);
  });

  it("production: images for every base Deployment, R3 streams on a 3-node NATS cluster with file storage", () => {
    const production = loadYaml(join(K8S, "overlays/production/kustomization.yaml"));
    const images = (production.images as Doc[]).map((i) => i.name).sort();
    expect(images).toEqual(of("Deployment").map((d) => d.spec.template.spec.containers[0].image.split(":")[0]).sort());
    const literals = production.configMapGenerator[0].literals as string[];
    expect(production.configMapGenerator[0].behavior).toBe("merge");
    expect(literals).toContain("NATS_REPLICAS=3");

    const nats = loadYaml(join(K8S, "nats-values.yaml"));
    expect(nats.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(nats.config.jetstream.enabled).toBe(true);
    expect(nats.config.jetstream.fileStore.enabled).toBe(true);
    expect(nats.config.jetstream.fileStore.pvc.enabled).toBe(true);
    expect(nats.config.jetstream.merge.sync_interval).toBe("always");
    const natsHost = new URL(literals.find((l) => l.startsWith("NATS_URL="))!.slice("NATS_URL=".length)).hostname;
    expect(natsHost).toMatch(/^nats(\.|$)/); // the chart's client Service for release `nats`
  });

  it("MongoDB: a three-member replica set matching the MONGO_URL template", () => {
    const mongo = objects(join(K8S, "mongodb"));
    const sts = mongo.find((o) => o.kind === "StatefulSet");
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.template.spec.containers[0].args).toEqual(expect.arrayContaining(["--replSet", "rs0"]));
    const headless = mongo.find((o) => o.kind === "Service" && o.metadata.name === sts.spec.serviceName);
    expect(headless.spec.clusterIP).toBe("None");
    const url = read(join(K8S, "overlays/production/secrets.env.example")).match(/^MONGO_URL=(.*)$/m)![1]!;
    for (let i = 0; i < sts.spec.replicas; i++) expect(url).toContain(`${sts.metadata.name}-${i}.${headless.metadata.name}:27017`);
    expect(url).toContain("replicaSet=rs0");
    expect(read(join(K8S, "mongodb/init-replica-set.js"))).toMatch(/rs\.initiate\(\{ _id: "rs0"/);
  });

  it("documents how to deploy it", () => {
    const doc = read(join(ROOT, "docs/operations.md"));
    expect(doc).toContain("kubectl apply -k deploy/k8s/overlays/production");
    expect(doc).toContain("deploy/k8s/nats-values.yaml");
  });
});
