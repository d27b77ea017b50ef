import { containersOf, podSpecOf } from "./kustomize-render";
import type { Doc } from "./manifests";

/**
 * Every name one object of a rendered kustomization gives for another resolves: ConfigMaps and
 * Secrets (with their keys, for the ones rendered), volumes of mounts, autoscaler and ScaledObject
 * targets, selectors of Services, PDBs and NetworkPolicies, Ingress backends, a StatefulSet's
 * Service. A Secret or ConfigMap the render does not contain must be one the operator creates:
 * named in `external`.
 */
export function referenceProblems(objects: Doc[], external: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const pods = objects.filter(podSpecOf).map((o) => ({
    owner: `${o.kind}/${o.metadata.name}`,
    labels: (o.spec.template.metadata?.labels ?? {}) as Record<string, string>,
    spec: podSpecOf(o)!,
    claims: ((o.spec.volumeClaimTemplates ?? []) as Doc[]).map((c) => c.metadata.name as string),
  }));
  const matches = (selector: Doc, labels: Record<string, string>) =>
    Object.entries((selector?.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v) &&
    ((selector?.matchExpressions ?? []) as Doc[]).every((e) => (e.operator === "In" ? e.values.includes(labels[e.key]) : e.operator === "Exists" ? e.key in labels : true));
  const selects = (selector: Doc) => pods.filter((p) => matches(selector, p.labels));

  const source = (kind: "ConfigMap" | "Secret", name: string, key: string | undefined, optional: boolean, where: string) => {
    const object = named(kind, name);
    if (!object) {
      if (!external.has(name)) problems.push(`${where}: ${kind} ${name} is neither rendered nor made by the operator`);
      return;
    }
    if (key !== undefined && !optional && !(key in (object.data ?? {}))) problems.push(`${where}: ${kind} ${name} has no key ${key}`);
  };

  for (const { owner, spec, claims } of pods) {
    const volumes = new Set([...((spec.volumes ?? []) as Doc[]).map((v) => v.name), ...claims]);
    for (const volume of (spec.volumes ?? []) as Doc[]) {
      if (volume.secret) source("Secret", volume.secret.secretName, undefined, volume.secret.optional === true, `${owner} volume ${volume.name}`);
      if (volume.configMap) source("ConfigMap", volume.configMap.name, undefined, volume.configMap.optional === true, `${owner} volume ${volume.name}`);
    }
    for (const container of containersOf({ kind: "Job", spec: { template: { spec } } })) {
      const where = `${owner} container ${container.name}`;
      for (const mount of (container.volumeMounts ?? []) as Doc[]) if (!volumes.has(mount.name)) problems.push(`${where}: mounts unknown volume ${mount.name}`);
      for (const from of (container.envFrom ?? []) as Doc[]) {
        if (from.configMapRef) source("ConfigMap", from.configMapRef.name, undefined, from.configMapRef.optional === true, where);
        if (from.secretRef) source("Secret", from.secretRef.name, undefined, from.secretRef.optional === true, where);
      }
      for (const env of (container.env ?? []) as Doc[]) {
        const ref = env.valueFrom?.secretKeyRef ?? env.valueFrom?.configMapKeyRef;
        if (ref) source(env.valueFrom.secretKeyRef ? "Secret" : "ConfigMap", ref.name, ref.key, ref.optional === true, `${where} env ${env.name}`);
      }
      const ports = new Set(((container.ports ?? []) as Doc[]).map((p) => p.name));
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        const port = container[probe]?.httpGet?.port;
        if (typeof port === "string" && !ports.has(port)) problems.push(`${where} ${probe}: no port named ${port}`);
      }
    }
  }

  const scaled = new Map<string, string>();
  for (const object of objects) {
    const where = `${object.kind}/${object.metadata.name}`;
    const target = object.kind === "HorizontalPodAutoscaler" || object.kind === "ScaledObject" ? object.spec.scaleTargetRef : undefined;
    if (target) {
      if (!named(target.kind ?? "Deployment", target.name)) problems.push(`${where}: scales ${target.kind ?? "Deployment"} ${target.name}, which does not exist`);
      const other = scaled.get(target.name);
      if (other) problems.push(`${where}: ${target.name} is already scaled by ${other}`);
      scaled.set(target.name, where);
    }
    if (object.kind === "Service" && object.spec.selector) {
      const chosen = selects({ matchLabels: object.spec.selector });
      if (chosen.length === 0) problems.push(`${where}: its selector matches no pod`);
      for (const port of (object.spec.ports ?? []) as Doc[]) {
        if (typeof port.targetPort !== "string") continue;
        const declared = chosen.some((p) => containersOf({ kind: "Job", spec: { template: { spec: p.spec } } }).some((c) => ((c.ports ?? []) as Doc[]).some((cp) => cp.name === port.targetPort)));
        if (!declared) problems.push(`${where}: targetPort ${port.targetPort} is no container port of its pods`);
      }
    }
    if ((object.kind === "PodDisruptionBudget" || object.kind === "NetworkPolicy") && Object.keys(object.spec.podSelector ?? object.spec.selector ?? {}).length > 0) {
      if (selects(object.spec.podSelector ?? object.spec.selector).length === 0) problems.push(`${where}: its selector matches no pod`);
    }
    if (object.kind === "StatefulSet" && !named("Service", object.spec.serviceName)) problems.push(`${where}: no Service ${object.spec.serviceName}`);
    if (object.kind === "Ingress") {
      for (const tls of (object.spec.tls ?? []) as Doc[]) source("Secret", tls.secretName, undefined, false, where);
      for (const path of ((object.spec.rules ?? []) as Doc[]).flatMap((r) => r.http?.paths ?? [])) {
        const backend = path.backend.service;
        const service = named("Service", backend.name);
        if (!service) problems.push(`${where}: backend Service ${backend.name} does not exist`);
        else if (!((service.spec.ports ?? []) as Doc[]).some((p) => p.name === backend.port.name || p.port === backend.port.number)) {
          problems.push(`${where}: Service ${backend.name} has no port ${backend.port.name ?? backend.port.number}`);
        }
      }
    }
  }
  return problems;
}
