import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { loadYaml, loadYamlDocs, read, type Doc } from "./manifests";

/**
 * `kubectl kustomize <dir>`, offline, for the features deploy/k8s uses — no kustomize binary exists
 * on these machines and none may be downloaded at run time. Each kustomization renders its
 * resources (files, and directories recursively), then its generators (ConfigMaps, Secrets; a
 * missing operator file is read from its committed `.example`, as an operator would copy it), then
 * its transformers: JSON 6902 patches with a target, labels, namespace, images. Unknown fields of a
 * kustomization fail the render, as kustomize would. Generated names keep no hash suffix.
 */

const KNOWN_FIELDS = new Set(["apiVersion", "kind", "namespace", "resources", "images", "configMapGenerator", "secretGenerator", "patches", "labels"]);
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "StorageClass", "PersistentVolume"]);

export function renderKustomization(dir: string): Doc[] {
  const k = loadYaml(join(dir, "kustomization.yaml"));
  for (const field of Object.keys(k)) if (!KNOWN_FIELDS.has(field)) throw new Error(`${dir}/kustomization.yaml: unsupported field ${field}`);
  const objects: Doc[] = ((k.resources ?? []) as string[]).flatMap((entry) => {
    const path = resolve(dir, entry);
    if (entry.endsWith(".yaml")) {
      if (!existsSync(path)) throw new Error(`${dir}: resource ${entry} does not exist`);
      return loadYamlDocs(path).filter(Boolean);
    }
    if (!existsSync(join(path, "kustomization.yaml"))) throw new Error(`${dir}: resource ${entry} is no kustomization`);
    return renderKustomization(path);
  });

  for (const generator of (k.configMapGenerator ?? []) as Doc[]) {
    const data = generatedData(dir, generator);
    const existing = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === generator.name);
    if (generator.behavior === "merge") {
      if (!existing) throw new Error(`${dir}: configMapGenerator ${generator.name} merges into no ConfigMap`);
      existing.data = { ...existing.data, ...data };
    } else {
      if (existing) throw new Error(`${dir}: ConfigMap ${generator.name} generated twice`);
      objects.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: generator.name }, data });
    }
  }
  for (const generator of (k.secretGenerator ?? []) as Doc[]) {
    const data = Object.fromEntries(Object.entries(generatedData(dir, generator)).map(([key, value]) => [key, Buffer.from(value).toString("base64")]));
    objects.push({ apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: generator.name }, data });
  }

  for (const { target, patch } of (k.patches ?? []) as Doc[]) {
    const ops = parseYaml(patch) as Doc[];
    const targets = objects.filter((o) => (!target.kind || o.kind === target.kind) && (!target.name || new RegExp(`^(?:${target.name})$`).test(o.metadata.name)));
    if (targets.length === 0) throw new Error(`${dir}: patch target ${JSON.stringify(target)} matches nothing`);
    for (const object of targets) for (const op of ops) applyOperation(object, op);
  }
  for (const { pairs } of (k.labels ?? []) as Doc[]) for (const object of objects) object.metadata.labels = { ...object.metadata.labels, ...pairs };
  if (k.namespace) for (const object of objects) if (!CLUSTER_SCOPED.has(object.kind)) object.metadata.namespace = k.namespace;
  for (const image of (k.images ?? []) as Doc[]) {
    for (const container of objects.flatMap(containersOf)) {
      const [name] = (container.image as string).split(":");
      if (name === image.name) container.image = `${image.newName ?? name}:${image.newTag ?? "latest"}`;
    }
  }
  return objects;
}

/** The pod template's containers (init containers too) of a workload or Job; none for other kinds. */
export function containersOf(object: Doc): Doc[] {
  const pod = podSpecOf(object);
  return pod ? [...(pod.initContainers ?? []), ...(pod.containers ?? [])] : [];
}

export function podSpecOf(object: Doc): Doc | undefined {
  return ["Deployment", "StatefulSet", "DaemonSet", "Job"].includes(object.kind) ? object.spec?.template?.spec : undefined;
}

function generatedData(dir: string, generator: Doc): Record<string, string> {
  const data: Record<string, string> = {};
  for (const literal of (generator.literals ?? []) as string[]) {
    const eq = literal.indexOf("=");
    data[literal.slice(0, eq)] = literal.slice(eq + 1);
  }
  for (const file of (generator.files ?? []) as string[]) {
    const [key, path] = file.includes("=") ? file.split("=") : [basename(file), file];
    data[key!] = read(operatorFile(dir, path!));
  }
  for (const env of (generator.envs ?? []) as string[]) {
    for (const line of read(operatorFile(dir, env)).split("\n")) {
      if (!line.trim() || line.trimStart().startsWith("#")) continue;
      const eq = line.indexOf("=");
      data[line.slice(0, eq)] = line.slice(eq + 1);
    }
  }
  return data;
}

function operatorFile(dir: string, path: string): string {
  const full = resolve(dir, path);
  if (existsSync(full)) return full;
  if (existsSync(`${full}.example`)) return `${full}.example`;
  throw new Error(`${dir}: generator file ${path} does not exist (nor ${path}.example)`);
}

function applyOperation(object: Doc, op: { op: string; path: string; value?: unknown }): void {
  const parts = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  const last = parts.pop()!;
  let parent = object;
  for (const part of parts) {
    if (parent[part] === undefined) throw new Error(`patch ${op.op} ${op.path}: ${part} missing in ${object.kind}/${object.metadata.name}`);
    parent = parent[part];
  }
  if (op.op === "remove" || op.op === "replace") {
    if (!(last in parent)) throw new Error(`patch ${op.op} ${op.path}: nothing there in ${object.kind}/${object.metadata.name}`);
  }
  if (op.op === "remove") {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (op.op === "add" && Array.isArray(parent)) {
    parent.splice(last === "-" ? parent.length : Number(last), 0, op.value);
  } else if (op.op === "add" || op.op === "replace") {
    parent[last] = op.value;
  } else {
    throw new Error(`patch op ${op.op} is not supported`);
  }
}
