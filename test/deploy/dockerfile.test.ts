import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
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
  type PackageJson,
} from "./manifests";

/**
 * No Docker engine runs here, so the image is checked the other way round: everything the
 * Dockerfile names must exist in the repository, agree with the toolchain, and start the service
 * the way scripts/lib/launch.ts does (image-rehearsal.test.ts then runs its build command).
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
    expect(runs.some((r) => /pnpm fetch --prod/.test(r))).toBe(true);
    expect(runs.some((r) => r.includes('test -f "services/${SERVICE}/src/main.ts"'))).toBe(true);
    for (const service of SERVICES) expect(servicePackage(service).name).toBe(`@litrev/${service}`);
  });

  it("runs as a non-root user with a health check whose script it ships", () => {
    const user = final.filter((i) => i.keyword === "USER").at(-1);
    expect(user?.args).toBeDefined();
    expect(user!.args).not.toMatch(/^(root|0)(:|$)/);
    const health = final.find((i) => i.keyword === "HEALTHCHECK");
    const command = execForm(health!.args);
    expect(command[0]).toBe("node");
    const script = command[1]!;
    const shipped = final.find((i) => i.keyword === "COPY" && i.args.endsWith(` ./${script}`));
    expect(shipped, `COPY … ./${script}`).toBeDefined();
    expect(exists(join(ROOT, copySources(shipped!.args)![0]!))).toBe(true);
  });

  it("starts each service exactly as scripts/lib/launch.ts does: tsx, then telemetry, then main.ts", () => {
    const cmd = execForm(final.find((i) => i.keyword === "CMD")!.args);
    expect(cmd[0]).toBe("node");
    const imageArgs = cmd.slice(1);
    const telemetry = JSON.parse(read(join(ROOT, "libs/telemetry/package.json"))) as PackageJson;
    for (const service of SERVICES) {
      const local = serviceArgs(service);
      expect(imageArgs.length).toBe(local.length);
      // In the image the package is the working directory and workspace libraries are packages in
      // node_modules; map each argument back to the file it names in the repository.
      const resolved = imageArgs.map((arg) => {
        if (arg.startsWith("@litrev/telemetry/")) return resolve(ROOT, "libs/telemetry", telemetry.exports![`./${arg.split("/").pop()}`]!);
        if (arg.endsWith(".ts")) return resolve(ROOT, "services", service, arg);
        return arg;
      });
      expect(resolved).toEqual(local);
      for (const file of resolved.filter((a) => a.endsWith(".ts"))) expect(exists(file), file).toBe(true);
      // Both loaders must be production dependencies of the service, or `pnpm deploy --prod` drops them.
      const deps = servicePackage(service).dependencies ?? {};
      expect(deps, `${service} dependencies`).toHaveProperty("tsx");
      expect(deps, `${service} dependencies`).toHaveProperty("@litrev/telemetry");
    }
  });

  it("names each service in telemetry and sends SIGTERM to node itself (exec form, no shell)", () => {
    const env = final.filter((i) => i.keyword === "ENV").map((i) => i.args).join(" ");
    expect(env).toMatch(/OTEL_SERVICE_NAME=litrev-\$\{SERVICE\}/);
    expect(final.find((i) => i.keyword === "STOPSIGNAL")?.args).toBe("SIGTERM");
    expect(final.find((i) => i.keyword === "CMD")!.args.trim().startsWith("[")).toBe(true);
  });
});
