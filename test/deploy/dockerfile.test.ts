import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildEntries, builtServiceArgs } from "../../scripts/lib/build";
import { serviceArgs } from "../../scripts/lib/launch";
import {
  DEPLOY,
  ROOT,
  SERVICES,
  copySources,
  execForm,
  exists,
  globalArgs,
  parseDockerfile,
  read,
  servicePackage,
  toolchainPins,
} from "./manifests";

/**
 * No Docker engine runs here, so the image is checked the other way round: everything the
 * Dockerfile names must exist in the repository, agree with the toolchain, and start the compiled
 * service the way scripts/lib/launch.ts starts its source (image-rehearsal.test.ts then runs its
 * build stage and starts what it built).
 */

const dockerfile = join(DEPLOY, "Dockerfile");
const instructions = parseDockerfile(read(dockerfile));
const stages = [...new Set(instructions.map((i) => i.stage).filter(Boolean))];
const finalStage = stages.at(-1)!;
const final = instructions.filter((i) => i.stage === finalStage);
const args = globalArgs(instructions);

describe("deploy/Dockerfile", () => {
  it("is multi-stage on the Node LTS and pnpm the toolchain pins", () => {
    const pins = toolchainPins();
    expect(stages.length).toBeGreaterThanOrEqual(3);
    expect(args.NODE_VERSION).toBe(pins.nodeMajor);
    expect(args.PNPM_VERSION).toBe(pins.pnpm);
    for (const from of instructions.filter((i) => i.keyword === "FROM" && !stages.includes(i.args.split(/\s+/)[0]!))) {
      expect(from.args).toMatch(/^node:\$\{NODE_VERSION\}-\S*slim\b/);
    }
  });

  it("copies only paths that exist in the build context (the repository root)", () => {
    const copies = instructions.filter((i) => i.keyword === "COPY");
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const sources = copySources(copy.args);
      if (!sources) continue; // COPY --from=<stage>
      for (const source of sources) expect(exists(join(ROOT, source)), `COPY ${source}`).toBe(true);
    }
    // Its ignore file sits beside it (BuildKit's <Dockerfile>.dockerignore) and keeps host installs out.
    expect(read(`${dockerfile}.dockerignore`)).toMatch(/node_modules/);
  });

  it("builds production dependencies of @litrev/${SERVICE} only, with a guard for a wrong SERVICE", () => {
    const runs = instructions.filter((i) => i.keyword === "RUN").map((i) => i.args);
    const deploy = runs.find((r) => /\bpnpm\b.*\bdeploy\b/.test(r));
    expect(deploy).toMatch(/--filter "@litrev\/\$\{SERVICE\}"/);
    expect(deploy).toMatch(/--prod\b/);
    expect(runs.some((r) => r.includes('test -f "services/${SERVICE}/src/main.ts"'))).toBe(true);
    // The runtime stage takes the build stage's output and nothing else from the repository.
    expect(final.filter((i) => i.keyword === "COPY").map((i) => i.args)).toEqual([`--from=${stages.at(-2)} /out ./`]);
    for (const service of SERVICES) {
      expect(servicePackage(service).name).toBe(`@litrev/${service}`);
      // tsx is a development tool now: in a service's dependencies it would land in the image.
      expect(servicePackage(service).dependencies ?? {}, service).not.toHaveProperty("tsx");
    }
  });

  it("runs as a non-root user with a health check it compiled", () => {
    const user = final.filter((i) => i.keyword === "USER").at(-1);
    expect(user?.args).toBeDefined();
    expect(user!.args).not.toMatch(/^(root|0)(:|$)/);
    const health = final.find((i) => i.keyword === "HEALTHCHECK");
    const command = execForm(health!.args);
    expect(command).toEqual(["node", "dist/healthcheck.js"]);
    expect(exists(buildEntries("gateway").healthcheck!)).toBe(true);
  });

  it("compiles in the build stage and starts the compiled loader and service as scripts/lib/launch.ts starts their sources", () => {
    const compile = instructions.find((i) => i.keyword === "RUN" && i.args.includes("scripts/build.ts"));
    expect(compile?.args).toMatch(/scripts\/build\.ts "\$\{SERVICE\}" \/out\/dist\b/);
    for (const source of copySources(instructions.find((i) => i.keyword === "COPY" && i.args.includes("scripts/lib/build.ts"))!.args)!) {
      expect(exists(join(ROOT, source)), source).toBe(true);
    }
    const cmd = execForm(final.find((i) => i.keyword === "CMD")!.args);
    expect(cmd).toEqual(["node", ...builtServiceArgs("dist")]);
    for (const service of SERVICES) {
      // Each compiled file stands for the TypeScript that tsx would run, in the same order.
      const entries = buildEntries(service);
      const compiled = builtServiceArgs("dist").map((arg) => {
        const name = /(?:^|\/)(\w+)\.js$/.exec(arg)?.[1];
        return name ? entries[name] : arg;
      });
      // tsx's own loader (`--import tsx`) is what the compiled form does without.
      const source = serviceArgs(service);
      const tsx = source.indexOf("tsx");
      expect(compiled).toEqual([...source.slice(0, tsx - 1), ...source.slice(tsx + 1)]);
      // The loader must be a production dependency of the service, or `pnpm deploy --prod` drops its packages.
      expect(servicePackage(service).dependencies ?? {}, `${service} dependencies`).toHaveProperty("@litrev/telemetry");
    }
  });

  it("names each service in telemetry and sends SIGTERM to node itself (exec form, no shell)", () => {
    const env = final.filter((i) => i.keyword === "ENV").map((i) => i.args).join(" ");
    expect(env).toMatch(/OTEL_SERVICE_NAME=litrev-\$\{SERVICE\}/);
    expect(final.find((i) => i.keyword === "STOPSIGNAL")?.args).toBe("SIGTERM");
    expect(final.find((i) => i.keyword === "CMD")!.args.trim().startsWith("[")).toBe(true);
  });
});
