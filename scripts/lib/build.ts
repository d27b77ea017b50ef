import { build, type Plugin } from "esbuild";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, type ServiceProcess } from "./launch";

/**
 * The production build of one process: its TypeScript (the service and the workspace libraries it
 * uses) compiled to plain JavaScript with source maps, npm packages left as imports. Used by
 * deploy/Dockerfile (`scripts/build.ts`) and by the image rehearsal, which starts what it writes.
 *
 * npm packages stay external so that they load from node_modules as they do under tsx: the
 * OpenTelemetry hooks instrument fastify, mongodb, pino and undici by their module names, which a
 * bundled copy would hide. Code splitting keeps one copy of a module that both the telemetry loader
 * and the service import (the SDK started by the loader is the one the service stops on shutdown).
 */

/** Output file (without `.js`) → the source it is built from. */
export function buildEntries(service: ServiceProcess): Record<string, string> {
  return {
    main: join(ROOT, `services/${service}/src/main.ts`),
    register: join(ROOT, "libs/telemetry/src/register.ts"),
    healthcheck: join(ROOT, "deploy/healthcheck.ts"),
    // Worker threads are files of their own: the gateway's thread for large bodies and validations.
    ...(service === "gateway" ? { "body-worker": join(ROOT, "services/gateway/src/body-worker.ts") } : {}),
  };
}

/**
 * The node arguments that run a build written to `dir` (relative to the working directory): the
 * telemetry loader first, then the service, exactly as scripts/lib/launch.ts serviceArgs() orders
 * tsx's equivalents.
 */
export function builtServiceArgs(dir: string): string[] {
  return ["--enable-source-maps", "--import", `./${dir}/register.js`, `${dir}/main.js`];
}

/** Bare imports of npm packages (and node: built-ins) stay imports; `@litrev/*` workspace code is compiled in. */
const npmPackagesExternal: Plugin = {
  name: "npm-packages-external",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@litrev/") ? undefined : { path: args.path, external: true }));
  },
};

export async function buildService(service: ServiceProcess, outDir: string): Promise<string[]> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: buildEntries(service),
    outdir: outDir,
    // Chunks beside the entries: code that finds files relative to itself (import.meta.url) sees one directory.
    entryNames: "[name]",
    chunkNames: "[name]-[hash]",
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node22",
    sourcemap: true,
    // Stack traces and logs name functions and classes as in the source.
    keepNames: true,
    metafile: true,
    logLevel: "warning",
    plugins: [npmPackagesExternal],
  });
  const files = Object.keys(result.metafile.outputs);
  if (service === "gateway") {
    // The console's reference import for the browser, built now: the image carries no esbuild.
    const { buildReferencesBundle, REFERENCES_BUNDLE } = await import("../../services/gateway/src/console/references-bundle");
    writeFileSync(join(outDir, REFERENCES_BUNDLE), await buildReferencesBundle());
    files.push(join(outDir, REFERENCES_BUNDLE));
  }
  return files;
}
