import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GatewayEnv } from "../../services/gateway/src/env";
import { DEPLOY, loadYaml, read, ROOT } from "../deploy/manifests";

/**
 * The surface settings of each way to run the service (docs/security.md, "Bounds and surface"):
 * docs closed and metrics on loopback unless a setup opens them on purpose, and only `npm start`,
 * a local try-out, opening the docs.
 */

const compose = loadYaml(join(DEPLOY, "compose.yaml"));
const composeEnv = (service: string): Record<string, string> => compose.services[service].environment ?? {};
const k8sLiterals = (): Record<string, string> => {
  const kustomization = loadYaml(join(DEPLOY, "k8s/base/kustomization.yaml"));
  const literals = kustomization.configMapGenerator.find((g: { name: string }) => g.name === "litrev-config").literals as string[];
  return Object.fromEntries(literals.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
};
/** `${NAME:-default}` as compose resolves it with nothing in the environment. */
const composeDefault = (value: string) => value.match(/^\$\{[A-Z_]+:-(.*)\}$/)?.[1] ?? value;

describe("surface settings", () => {
  it("the gateway's own defaults: docs behind the key, timeouts set", () => {
    const env = GatewayEnv.parse({ API_KEY: "k", JOB_KEY_SECRET: "a-secret-of-enough-length" });
    expect(env.DOCS_PUBLIC).toBe(false);
    expect(env.REQUEST_TIMEOUT_MS).toBeGreaterThan(0);
    expect(env.HEADERS_TIMEOUT_MS).toBeGreaterThan(0);
  });

  it("compose keeps the docs closed and every metrics listener on loopback", () => {
    expect(composeDefault(composeEnv("gateway").DOCS_PUBLIC!)).toBe("false");
    for (const service of ["gateway", "screening", "indexer", "criteria"]) {
      expect(composeEnv(service).METRICS_HOST, service).toBeUndefined();
    }
  });

  it("Kubernetes keeps the docs closed; its metrics port is opened for Prometheus on purpose", () => {
    const literals = k8sLiterals();
    expect(literals.DOCS_PUBLIC).toBe("false");
    expect(literals.METRICS_HOST).toBe("0.0.0.0");
  });

  it("npm start, a local try-out, opens the docs unless told otherwise", () => {
    expect(read(join(ROOT, "scripts/stack.ts"))).toMatch(/if \(!process\.env\.DOCS_PUBLIC\) env\.DOCS_PUBLIC = "true";/);
  });
});
