import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { ROOT, SERVICES, type ServiceProcess } from "../../scripts/lib/launch";

/** Reading the deployment files the way their tools would, for the deploy suites. */

export { ROOT, SERVICES };
export const DEPLOY = join(ROOT, "deploy");

export const read = (path: string) => readFileSync(path, "utf8");
export const exists = (path: string) => existsSync(path);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are arbitrary YAML
export type Doc = any;

/** YAML 1.1 merge keys (`<<: *anchor`) as compose resolves them. */
export function loadYaml(path: string): Doc {
  return parseYaml(read(path), { merge: true });
}

/**
 * A compose file as `docker compose config` renders it: merge keys resolved, then every `${VAR}`,
 * `${VAR:-default}` and `${VAR:?message}` interpolated from `env` (`$$` is a literal `$`). A
 * required variable that `env` leaves empty throws, naming it, as compose refuses to start.
 */
export function renderCompose(path: string, env: Record<string, string>): Doc {
  const interpolate = (value: unknown): unknown => {
    if (typeof value === "string") {
      return value.replace(/\$\$|\$\{(\w+)(?:(:-|:\?)([^}]*))?\}/g, (match, name: string | undefined, op: string | undefined, arg: string | undefined) => {
        if (match === "$$") return "$";
        const set = env[name!];
        if (set) return set;
        if (op === ":?") throw new Error(`${name} is required: ${arg}`);
        return op === ":-" ? arg! : "";
      });
    }
    if (Array.isArray(value)) return value.map(interpolate);
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v)]));
    return value;
  };
  return interpolate(loadYaml(path));
}

/** `NAME=value` lines of an env file. */
export function envFile(path: string): Record<string, string> {
  return Object.fromEntries(
    read(path)
      .split("\n")
      .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

export function loadYamlDocs(path: string): Doc[] {
  return parseAllDocuments(read(path), { merge: true }).map((d) => {
    if (d.errors.length) throw new Error(`${path}: ${d.errors[0]!.message}`);
    return d.toJS();
  });
}

export function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

export const rel = (path: string) => relative(ROOT, path);

// ---------------------------------------------------------------------------------------------
// Dockerfile

export interface Instruction {
  keyword: string;
  args: string;
  stage: string;
}

/** Instructions with line continuations joined and comments dropped, each tagged with its stage. */
export function parseDockerfile(text: string): Instruction[] {
  const logical: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (!current && (line.trim() === "" || line.trim().startsWith("#"))) continue;
    if (current && line.trim().startsWith("#")) continue;
    if (line.endsWith("\\")) {
      current += line.slice(0, -1) + " ";
      continue;
    }
    logical.push((current + line).trim());
    current = "";
  }
  let stage = "";
  return logical.map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(" ");
    if (keyword!.toUpperCase() === "FROM") stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? args;
    return { keyword: keyword!.toUpperCase(), args, stage };
  });
}

/** `ARG NAME=default` values declared before the first FROM (the global build args). */
export function globalArgs(instructions: Instruction[]): Record<string, string> {
  const args: Record<string, string> = {};
  for (const ins of instructions) {
    if (ins.keyword === "FROM") break;
    if (ins.keyword === "ARG") {
      const [name, value] = ins.args.split("=");
      args[name!] = value ?? "";
    }
  }
  return args;
}

/** `ENV A=1 B=2` of one stage, with `${VAR}` replaced from `vars`. */
export function stageEnv(instructions: Instruction[], stage: string, vars: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of instructions.filter((i) => i.stage === stage && i.keyword === "ENV")) {
    for (const pair of ins.args.split(/\s+/)) {
      const eq = pair.indexOf("=");
      if (eq > 0) env[pair.slice(0, eq)] = substitute(pair.slice(eq + 1), vars);
    }
  }
  return env;
}

export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\{(\w+)\}|\$(\w+)/g, (_m, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? "");
}

/** The JSON exec form of CMD / HEALTHCHECK CMD. */
export function execForm(args: string): string[] {
  const json = args.replace(/^.*?CMD\s+/i, "");
  const parsed: unknown = JSON.parse(json.startsWith("[") ? json : args);
  if (!Array.isArray(parsed)) throw new Error(`not an exec form: ${args}`);
  return parsed as string[];
}

/** Source paths of a COPY from the build context (not `--from=`), flags removed. */
export function copySources(args: string): string[] | undefined {
  const parts = args.split(/\s+/);
  if (parts.some((p) => p.startsWith("--from="))) return undefined;
  const paths = parts.filter((p) => !p.startsWith("--"));
  return paths.slice(0, -1);
}

// ---------------------------------------------------------------------------------------------
// The repository's own facts

export function toolchainPins(): { nodeMajor: string; pnpm: string } {
  const script = read(join(ROOT, "scripts/toolchain.sh"));
  return {
    nodeMajor: /^NODE_MAJOR=(\d+)/m.exec(script)![1]!,
    pnpm: /^PNPM_VERSION=([\d.]+)/m.exec(script)![1]!,
  };
}

export interface PackageJson {
  name: string;
  dependencies?: Record<string, string>;
  exports?: Record<string, string>;
}

export function servicePackage(service: string): PackageJson {
  return JSON.parse(read(join(ROOT, "services", service, "package.json"))) as PackageJson;
}

export function isService(name: string): name is ServiceProcess {
  return (SERVICES as readonly string[]).includes(name);
}

/** `litrev/<service>[:tag]` → service. */
export function serviceOfImage(image: string): string | undefined {
  return /^(?:[^/]+\/)*litrev\/([a-z-]+)(?::[\w.-]+)?$/.exec(image.replace(/\$\{[^}]*\}/g, "x"))?.[1];
}

/** Env var names documented in docs/operations.md (table rows and inline code). */
export function documentedNames(): Set<string> {
  const doc = read(join(ROOT, "docs/operations.md"));
  return new Set([...doc.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}
