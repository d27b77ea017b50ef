import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Job } from "kubernetes-models/batch/v1";
import { NetworkPolicy, Ingress } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Namespace, Secret, Service } from "kubernetes-models/v1";
import type { Doc } from "./manifests";

/**
 * Kubernetes and KEDA objects checked offline against the published schemas (npm
 * `kubernetes-models`, `@kubernetes-models/keda`: the API server's OpenAPI and KEDA's CRDs compiled
 * to validators). Those validators ignore fields they do not know, where the API server's strict
 * field validation refuses them; so each object is validated through a proxy that records which
 * fields the validator looked at: a field of an object the schema describes that it never looked
 * at is unknown. (An object the validator did not look into at all is free-form, e.g. labels.)
 */

interface Validates {
  prototype: { validate(): void };
}
const MODELS: Record<string, Validates> = Object.fromEntries(
  [ScaledObject, Deployment, StatefulSet, HorizontalPodAutoscaler, Job, NetworkPolicy, Ingress, PodDisruptionBudget, ConfigMap, Namespace, Secret, Service].map(
    (model) => [`${model.apiVersion}/${model.kind}`, model as unknown as Validates],
  ),
);

/** Problems of one object: its kind unknown here, schema violations, unknown fields (as JSON paths). */
export function schemaProblems(object: Doc): string[] {
  const model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!model) return [`${object.apiVersion}/${object.kind}: no schema here for this kind`];
  const looked = new WeakMap<object, Set<PropertyKey>>();
  const enumerated = new WeakSet<object>();
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown): unknown => {
    if (!value || typeof value !== "object") return value;
    const target = value as object;
    let proxy = proxies.get(target);
    if (!proxy) {
      looked.set(target, new Set());
      proxy = new Proxy(target, {
        get(t, key, receiver) {
          looked.get(t)!.add(key);
          return wrap(Reflect.get(t, key, receiver));
        },
        has(t, key) {
          looked.get(t)!.add(key);
          return Reflect.has(t, key);
        },
        ownKeys(t) {
          enumerated.add(t);
          return Reflect.ownKeys(t);
        },
      });
      proxies.set(target, proxy);
    }
    return proxy;
  };
  const problems: string[] = [];
  try {
    model.prototype.validate.call(wrap(object));
  } catch (error) {
    problems.push((error as Error).message);
  }
  const unknown = (value: unknown, path: string): void => {
    if (!value || typeof value !== "object") return;
    if (Array.isArray(value)) return value.forEach((item, i) => unknown(item, `${path}[${i}]`));
    const seen = looked.get(value);
    if (!seen || seen.size === 0 || enumerated.has(value)) return;
    for (const [key, child] of Object.entries(value)) {
      if (seen.has(key)) unknown(child, `${path}.${key}`);
      else problems.push(`${path}.${key}: unknown field`);
    }
  };
  unknown(object, `${object.kind}/${object.metadata?.name}`);
  return problems;
}
