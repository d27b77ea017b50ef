import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { schemaProblems } from "./k8s-schemas";
import { referenceProblems } from "./k8s-references";
import { containersOf, renderKustomization } from "./kustomize-render";
import { DEPLOY, ROOT, SERVICES, documentedNames, exists, loadYaml, loadYamlDocs, read, rel, serviceOfImage, walk, type Doc } from "./manifests";

/**
 * deploy/k8s checked the way kustomize would resolve it: every referenced file exists, every
 * overlay renders (kustomize-render.ts) into objects that the Kubernetes and KEDA schemas accept
 * with no unknown field (k8s-schemas.ts), and whose names for one another all resolve
 * (k8s-references.ts); then what production needs is there.
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
const overlays = walk(join(K8S, "overlays")).filter((p) => p.endsWith("/kustomization.yaml")).map(dirname);
const production = renderKustomization(join(K8S, "overlays/production"));
const operations = read(join(ROOT, "docs/operations.md"));
/** Secrets and ConfigMaps the operator makes: each created in the walkthrough of docs/operations.md. */
const operatorMade = new Set([...operations.matchAll(/kubectl (?:-n \S+ )?create secret (?:generic|tls) ([a-z0-9-]+)/g)].map((m) => m[1]!));
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

  it("renders every overlay into objects the Kubernetes and KEDA schemas accept, with no unknown field", () => {
    expect(overlays.map(rel)).toEqual(["deploy/k8s/overlays/production"]);
    for (const overlay of overlays) {
      const rendered = renderKustomization(overlay);
      expect(rendered.length).toBeGreaterThan(20);
      expect(rendered.flatMap(schemaProblems), rel(overlay)).toEqual([]);
    }
  });

  it("the schema check itself refuses an unknown field, a wrong type and a missing required field", () => {
    const broken = structuredClone(production);
    const deployment = broken.find((o) => o.kind === "Deployment");
    deployment.spec.template.spec.containers[0].memoryLimit = "1Gi";
    const scaled = broken.find((o) => o.kind === "ScaledObject");
    scaled.spec.maxReplicas = 12; // the HPA's word, not KEDA's (maxReplicaCount)
    const policy = broken.find((o) => o.kind === "NetworkPolicy");
    policy.spec.podSelector = "all";
    const ingress = broken.find((o) => o.kind === "Ingress");
    delete ingress.spec.rules[0].http.paths[0].pathType;
    const problems = broken.flatMap(schemaProblems).join("\n");
    expect(problems).toContain("containers[0].memoryLimit: unknown field");
    expect(problems).toContain("ScaledObject/screening.spec.maxReplicas: unknown field");
    expect(problems).toMatch(/podSelector.*must be object|must be object/);
    expect(problems).toMatch(/pathType/);
  });

  it("resolves every reference of the production overlay; Secrets it does not render are created in the walkthrough", () => {
    expect(referenceProblems(production, operatorMade)).toEqual([]);
    // The check itself: a renamed target, a missing key, an unknown operator Secret are found.
    const broken = structuredClone(production);
    broken.find((o) => o.kind === "ScaledObject").spec.scaleTargetRef.name = "screening-worker";
    const env = broken.find((o) => o.kind === "Deployment" && o.metadata.name === "gateway").spec.template.spec.containers[0].env;
    env.find((e: Doc) => e.name === "API_KEY").valueFrom.secretKeyRef.key = "API_KEYZ";
    broken.find((o) => o.kind === "Ingress").spec.tls[0].secretName = "nowhere-tls";
    const problems = referenceProblems(broken, operatorMade).join("\n");
    expect(problems).toContain("scales Deployment screening-worker, which does not exist");
    expect(problems).toContain("Secret litrev-secrets has no key API_KEYZ");
    expect(problems).toContain("Secret nowhere-tls is neither rendered nor made by the operator");
  });

  it("production: workers scale on their backlog (KEDA), gateway and criteria on CPU, three of each at least", () => {
    const kinds = (kind: string) => production.filter((o) => o.kind === kind);
    for (const service of ["screening", "indexer"]) {
      const scaled = kinds("ScaledObject").find((o) => o.spec.scaleTargetRef.name === service);
      expect(scaled?.spec.minReplicaCount, service).toBe(3);
      const [trigger] = scaled.spec.triggers;
      expect(trigger.type).toBe("nats-jetstream");
      expect(trigger.metadata).toMatchObject({ stream: `LITREV_JOBS_${service.toUpperCase()}`, consumer: `${service}-workers` });
      // The scaler's metadata is free-form in KEDA's CRD: its names checked here against the scaler's.
      for (const key of Object.keys(trigger.metadata)) {
        expect(["natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold", "activationLagThreshold", "useHttps"]).toContain(key);
      }
      expect(scaled.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);
    }
    for (const service of ["gateway", "criteria"]) {
      const hpa = kinds("HorizontalPodAutoscaler").find((o) => o.spec.scaleTargetRef.name === service);
      expect(hpa?.spec.minReplicas, service).toBe(3);
    }
  });

  it("production: the provider-calling services' ceilings stay within the key's shared budget (LLM_CONCURRENCY)", () => {
    const config = production.find((o) => o.kind === "ConfigMap" && o.metadata.name === "litrev-config").data;
    const ceiling = (name: string) => {
      const scaler = production.find((o) => ["ScaledObject", "HorizontalPodAutoscaler"].includes(o.kind) && o.spec.scaleTargetRef.name === name);
      return (scaler.spec.maxReplicaCount ?? scaler.spec.maxReplicas) as number;
    };
    const total = ["criteria", "screening", "indexer"].map(ceiling).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(Number(config.LLM_CONCURRENCY));
  });

  it("production: default-deny NetworkPolicies and only the documented flows", () => {
    const policies = production.filter((o) => o.kind === "NetworkPolicy");
    const deny = policies.find((p) => Object.keys(p.spec.podSelector).length === 0 && !p.spec.ingress && !p.spec.egress);
    expect(deny?.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    const allowedPorts = new Set([53, 8000, 9464, 4222, 4318, 27017, 443]);
    for (const policy of policies) {
      for (const rule of [...(policy.spec.ingress ?? []), ...(policy.spec.egress ?? [])] as Doc[]) {
        expect(rule.ports?.length, `${policy.metadata.name}: every rule names its ports`).toBeGreaterThan(0);
        for (const port of rule.ports as Doc[]) expect(allowedPorts, `${policy.metadata.name}: port ${port.port}`).toContain(port.port);
      }
    }
    // The gateway reaches NATS and the collector only: no MongoDB, no provider.
    const gatewayEgress = policies.filter((p) => p.spec.egress && (p.spec.podSelector.matchExpressions ?? []).some((e: Doc) => e.values.includes("gateway")));
    const gatewayPorts = gatewayEgress.flatMap((p) => (p.spec.egress as Doc[]).flatMap((r) => (r.ports as Doc[]).map((x) => x.port)));
    expect(gatewayPorts.sort()).toEqual([4222, 4318]);
  });

  it("production: MongoDB with authentication (keyfile, one SCRAM user per service) and TLS required", () => {
    const mongo = production.find((o) => o.kind === "StatefulSet" && o.metadata.name === "mongo");
    const args = (mongo.spec.template.spec.containers[0].args as string[]).join(" ");
    expect(args).toMatch(/--keyFile=\S+/);
    expect(args).toContain("--tlsMode=requireTLS");
    const env = (mongo.spec.template.spec.containers[0].env as Doc[]).map((e) => e.name);
    expect(env).toEqual(expect.arrayContaining(["MONGO_INITDB_ROOT_USERNAME", "MONGO_INITDB_ROOT_PASSWORD"]));
    const secrets = production.find((o) => o.kind === "Secret" && o.metadata.name === "litrev-secrets").data;
    for (const service of ["screening", "indexer"]) {
      const url = Buffer.from(secrets[`MONGO_${service.toUpperCase()}_URL`], "base64").toString();
      expect(url).toMatch(new RegExp(`^mongodb://${service}:[^@]+@`));
      const params = new URLSearchParams(url.split("?")[1]);
      expect(params.get("authSource")).toBe(url.split("/")[3]!.split("?")[0]);
      expect(params.get("tls")).toBe("true");
      expect(params.get("replicaSet")).toBe("rs0");
      expect(params.get("tlsCAFile")).toMatch(/^\/etc\/litrev\/mongo-ca\//);
    }
    const job = production.find((o) => o.kind === "Job");
    expect(containersOf(job)[0].env.map((e: Doc) => e.name)).toEqual(expect.arrayContaining(["MONGO_SCREENING_URL", "MONGO_INDEXER_URL"]));
    expect(read(join(K8S, "mongodb/init-replica-set.js"))).toMatch(/createUser\(/);
  });

  it("production: an Ingress with TLS in front of the gateway that keeps event streams open", () => {
    const ingress = production.find((o) => o.kind === "Ingress");
    expect(ingress.spec.tls[0].secretName).toBeDefined();
    const annotations = ingress.metadata.annotations;
    expect(annotations["nginx.ingress.kubernetes.io/proxy-buffering"]).toBe("off");
    const rpcTimeoutS = Number(production.find((o) => o.kind === "ConfigMap" && o.metadata.name === "litrev-config").data.RPC_TIMEOUT_MS) / 1000;
    expect(Number(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"])).toBeGreaterThan(rpcTimeoutS);
  });

  it("has a Deployment, Service, autoscaler and PDB for each of the four services", () => {
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

      const autoscaler = base.find((o) => ["HorizontalPodAutoscaler", "ScaledObject"].includes(o.kind) && o.spec.scaleTargetRef.name === service);
      expect(autoscaler.spec.scaleTargetRef).toMatchObject({ apiVersion: "apps/v1", kind: "Deployment" });
      if (service === "screening" || service === "indexer") {
        expect(autoscaler.apiVersion).toBe("keda.sh/v1alpha1");
        expect(autoscaler.spec.minReplicaCount).toBeGreaterThanOrEqual(2);
      } else {
        expect(autoscaler.apiVersion).toBe("autoscaling/v2");
        expect(autoscaler.spec.metrics[0].resource.name).toBe("cpu");
        expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(2);
      }

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
        // The one literal: the V8 heap cap of the gateway and the job workers (flat memory at any job size).
        if (entry.name === "NODE_OPTIONS") {
          expect(["gateway", "screening", "indexer"], `${service} NODE_OPTIONS`).toContain(service);
          expect(entry.value).toMatch(/--max-old-space-size=\d+/);
          continue;
        }
        const ref = entry.valueFrom?.secretKeyRef;
        expect(secrets).toContain(ref.name);
        expect(secretKeys).toContain(ref.key);
      }
      expect(names.includes("JOB_KEY_SECRET"), `${service} JOB_KEY_SECRET`).toBe(["gateway", "screening", "indexer", "criteria"].includes(service));
      expect(names.includes("API_KEY"), `${service} API_KEY`).toBe(service === "gateway");
      expect(names.includes("NODE_OPTIONS"), `${service} NODE_OPTIONS`).toBe(["gateway", "screening", "indexer"].includes(service));
      expect(names.includes("MONGO_URL"), `${service} MONGO_URL`).toBe(service === "screening" || service === "indexer");
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

  it("MongoDB: a three-member replica set matching the MONGO_<SERVICE>_URL templates", () => {
    const mongo = objects(join(K8S, "mongodb"));
    const sts = mongo.find((o) => o.kind === "StatefulSet");
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.template.spec.containers[0].args).toContain("--replSet=rs0");
    const headless = mongo.find((o) => o.kind === "Service" && o.metadata.name === sts.spec.serviceName);
    expect(headless.spec.clusterIP).toBe("None");
    const members = containersOf(mongo.find((o) => o.kind === "Job"))[0].env.find((e: Doc) => e.name === "MONGO_RS_MEMBERS").value as string;
    const urls = [...read(join(K8S, "overlays/production/secrets.env.example")).matchAll(/^MONGO_\w+_URL=(.*)$/gm)].map((m) => m[1]!);
    expect(urls).toHaveLength(2);
    for (let i = 0; i < sts.spec.replicas; i++) {
      expect(members.split(",")).toContain(`${sts.metadata.name}-${i}.${headless.metadata.name}:27017`);
      for (const url of urls) expect(url).toContain(`${sts.metadata.name}-${i}.${headless.metadata.name}:27017`);
    }
    expect(read(join(K8S, "mongodb/init-replica-set.js"))).toMatch(/rs\.initiate\(\{ _id: "rs0"/);
  });

  it("documents how to deploy it", () => {
    const doc = read(join(ROOT, "docs/operations.md"));
    expect(doc).toContain("kubectl apply -k deploy/k8s/overlays/production");
    expect(doc).toContain("deploy/k8s/nats-values.yaml");
  });
});
