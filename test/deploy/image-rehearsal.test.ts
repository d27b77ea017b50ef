import { execFile, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startNatsServer, stopProcess, waitForPort, type NatsServerHandle } from "../../scripts/lib/launch";
import { TEST_API_KEY, waitFor } from "../support/stack";
import { DEPLOY, ROOT, SERVICES, copySources, execForm, parseDockerfile, read, stageEnv, substitute } from "./manifests";

/**
 * The image without Docker: for each service, run the Dockerfile's own build command
 * (`pnpm … deploy --prod` into a fresh directory, like its /out), lay out the runtime stage's files,
 * then start its CMD with its ENV from that directory, against a real nats-server. Proves that
 * production dependencies alone start the service, that the health check passes, that the
 * Prometheus endpoint serves, and that SIGTERM ends the process cleanly.
 */

const run = promisify(execFile);
const instructions = parseDockerfile(read(join(DEPLOY, "Dockerfile")));
const stages = [...new Set(instructions.map((i) => i.stage))];
const runtime = stages.at(-1)!;
const buildRun = instructions.find((i) => i.keyword === "RUN" && /\bpnpm\b.*\bdeploy\b/.test(i.args))!;
const cmd = execForm(instructions.find((i) => i.stage === runtime && i.keyword === "CMD")!.args);
const healthcheck = execForm(instructions.find((i) => i.stage === runtime && i.keyword === "HEALTHCHECK")!.args);
const runtimeCopies = instructions.filter((i) => i.stage === runtime && i.keyword === "COPY" && copySources(i.args));

let nats: NatsServerHandle;
const work = mkdtempSync(join(tmpdir(), "litrev-image-"));
const started: ChildProcess[] = [];

beforeAll(async () => {
  nats = await startNatsServer({ storeDir: join(work, "nats") });
});

afterAll(async () => {
  await Promise.all(started.map((child) => stopProcess(child, "SIGKILL")));
  await nats?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("image rehearsal: the Dockerfile's build and start commands, run here", () => {
  for (const service of SERVICES) {
    it(`${service}: builds with production dependencies only, starts, is healthy, serves metrics, stops on SIGTERM`, async () => {
      const out = join(work, service);
      // The build stage's command, verbatim but for its cache mount and output directory.
      const command = substitute(buildRun.args, { SERVICE: service })
        .replace(/--mount=\S+\s*/g, "")
        .replace(/\s\/out\b/, ` ${out}`);
      await run("bash", ["-c", command], { cwd: ROOT, env: process.env, maxBuffer: 16 * 1024 * 1024 });
      for (const copy of runtimeCopies) {
        const [source, target] = [copySources(copy.args)![0]!, copy.args.split(/\s+/).at(-1)!];
        copyFileSync(join(ROOT, source), join(out, target));
      }
      // Nothing from the workspace's devDependencies may be needed (or present) at run time.
      await expect(run(process.execPath, ["-e", "import('vitest')"], { cwd: out })).rejects.toThrow();

      const port = await freePort();
      const metricsPort = await freePort();
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...stageEnv(instructions, runtime, { SERVICE: service }),
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        NATS_URL: nats.url,
        API_KEY: TEST_API_KEY,
        JOB_KEY_SECRET: "rehearsal-job-key-secret-0123456789abcdef",
        SHUTDOWN_TIMEOUT_MS: "5000",
        LOG_LEVEL: "info",
      };
      const child = spawn(process.execPath, cmd.slice(1), { cwd: out, env, stdio: ["ignore", "pipe", "pipe"] });
      started.push(child);
      let output = "";
      child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
      child.stderr!.on("data", (c: Buffer) => (output += c.toString()));

      if (service === "gateway") {
        await waitForPort(port, 60_000, child);
        const health = await fetch(`http://127.0.0.1:${port}/health`);
        expect(health.status).toBe(200);
      } else {
        await waitFor(() => output.includes('"service ready"') || child.exitCode !== null, 60_000);
        expect(child.exitCode, output).toBeNull();
      }

      const check = await run(process.execPath, healthcheck.slice(1), { cwd: out, env }).catch((e: { stdout: string }) => e);
      expect(check.stdout, "HEALTHCHECK").toMatch(/^healthy/);

      const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(scrape.status).toBe(200);
      const text = await scrape.text();
      expect(text).toContain(`service_name="litrev-${service}"`);
      expect(text).toMatch(/^nodejs_eventloop_utilization/m);

      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
      child.kill("SIGTERM");
      expect(await exited, output).toBe(0);
    });
  }
});
