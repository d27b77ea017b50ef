import { build } from "esbuild";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * What each process really loads, checked from its real entry point: esbuild follows every static
 * and dynamic import from `main.ts` the way the runtime would, through the workspace packages'
 * `exports`. The gateway must load only the client side of libs/jobs: no worker, no job store that
 * opens a database, and not the MongoDB driver.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

async function modulesOf(entry: string): Promise<string[]> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent",
    outfile: "bundle.js",
  });
  return Object.keys(result.metafile.inputs);
}

const workerSide = /^libs\/jobs\/src\/(worker\/|store\/(mongo|embedded|open|retrying)-job-store|service-jobs|queue|infra)/;
const mongoDriver = /node_modules\/(\.pnpm\/mongodb@[^/]+\/node_modules\/)?mongodb\//;

describe("process entry points", () => {
  it("the gateway's main.ts reaches neither job-worker code, the job stores nor the MongoDB driver", async () => {
    const modules = await modulesOf("services/gateway/src/main.ts");
    expect(modules.filter((m) => m.startsWith("libs/jobs/src/client/")).length).toBeGreaterThan(5);
    expect(modules.filter((m) => workerSide.test(m))).toEqual([]);
    expect(modules.filter((m) => mongoDriver.test(m))).toEqual([]);
  });

  it("the check itself sees worker code and the driver where they are used (the screening service)", async () => {
    const modules = await modulesOf("services/screening/src/main.ts");
    expect(modules.some((m) => m.startsWith("libs/jobs/src/worker/"))).toBe(true);
    expect(modules.some((m) => mongoDriver.test(m))).toBe(true);
  });
});
