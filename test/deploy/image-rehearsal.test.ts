import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OFF_LOOP_MIN_BYTES } from "../../services/gateway/src/off-loop-parse";
import { freePort, startNatsServer, stopProcess, waitForPort, type NatsServerHandle } from "../../scripts/lib/launch";
import { http, TEST_API_KEY, waitFor } from "../support/stack";
import { DEPLOY, ROOT, SERVICES, execForm, parseDockerfile, read, stageEnv, substitute, walk } from "./manifests";

/**
 * The image without Docker: for each service, run the Dockerfile's build stage (its `pnpm deploy`
 * and compile commands, into a fresh directory standing for its /out; the workspace install that
 * precedes them is the one scripts/toolchain.sh made), then start every process with the runtime
 * stage's CMD and ENV from those directories, against one real nats-server, and run a mock
 * screening job through the gateway. Proves that the compiled JavaScript and the production
 * dependencies alone make a working stack, that the health checks pass, that the Prometheus
 * endpoints serve, and that SIGTERM ends each process cleanly.
 */

const run = promisify(execFile);
const instructions = parseDockerfile(read(join(DEPLOY, "Dockerfile")));
const stages = [...new Set(instructions.map((i) => i.stage))];
const runtime = stages.at(-1)!;
const builder = instructions.find((i) => i.stage === runtime && i.keyword === "COPY" && i.args.includes("--from="))!.args.match(/--from=(\S+)/)![1]!;
// The toolchain already installed the workspace from the lockfile: fetch and install are what it did.
const buildRuns = instructions.filter((i) => i.stage === builder && i.keyword === "RUN" && !/^(--mount=\S+\s+)*pnpm (fetch|install)\b/.test(i.args));
const cmd = execForm(instructions.find((i) => i.stage === runtime && i.keyword === "CMD")!.args);
const healthcheck = execForm(instructions.find((i) => i.stage === runtime && i.keyword === "HEALTHCHECK")!.args);

let nats: NatsServerHandle;
const work = mkdtempSync(join(tmpdir(), "litrev-image-"));
const started = new Map<string, { child: ChildProcess; env: NodeJS.ProcessEnv; out: string; output: () => string }>();

/** The build stage's commands for one service, verbatim but for cache mounts and the output directory. */
async function buildImage(service: string): Promise<string> {
  const out = join(work, service);
  for (const step of buildRuns) {
    const command = substitute(step.args, { SERVICE: service })
      .replace(/--mount=\S+\s*/g, "")
      .replace(/(^|\s)\/out\b/g, `$1${out}`);
    await run("bash", ["-c", command], { cwd: ROOT, env: process.env, maxBuffer: 16 * 1024 * 1024 });
  }
  return out;
}

beforeAll(async () => {
  nats = await startNatsServer({ storeDir: join(work, "nats") });
});

afterAll(async () => {
  await Promise.all([...started.values()].map(({ child }) => stopProcess(child, "SIGKILL")));
  await nats?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("image rehearsal: the Dockerfile's build stage and start command, run here", () => {
  it("builds every service to JavaScript beside production dependencies only", async () => {
    for (const service of SERVICES) {
      const out = await buildImage(service);
      const files = walk(out).map((f) => relative(out, f));
      expect(files.filter((f) => !f.startsWith("node_modules/") && f.endsWith(".ts")), `${service}: TypeScript left in the image`).toEqual([]);
      for (const file of cmd.slice(1).filter((a) => a.endsWith(".js"))) expect(files, service).toContain(file.replace(/^\.\//, ""));
      expect(files, service).toContain(`${cmd.at(-1)}.map`);
      // Nothing from the workspace's devDependencies may be needed (or present) at run time: no tsx, no compiler.
      for (const dev of ["tsx", "typescript", "esbuild", "vitest"]) {
        await expect(run(process.execPath, ["-e", `import(${JSON.stringify(dev)})`], { cwd: out }), `${service}: ${dev}`).rejects.toThrow();
      }
    }
  }, 180_000);

  it("starts every process from its build, healthy, with metrics, and runs a mock screening job", async () => {
    const port = await freePort();
    for (const service of SERVICES) {
      const out = join(work, service);
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...stageEnv(instructions, runtime, { SERVICE: service }),
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        NATS_URL: nats.url,
        API_KEY: TEST_API_KEY,
        JOB_KEY_SECRET: "rehearsal-job-key-secret-0123456789abcdef",
        SHUTDOWN_TIMEOUT_MS: "5000",
        LOG_LEVEL: "info",
      };
      const child = spawn(process.execPath, cmd.slice(1), { cwd: out, env, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
      child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
      started.set(service, { child, env, out, output: () => output });
    }
    for (const [service, { child, output }] of started) {
      if (service === "gateway") await waitForPort(port, 60_000, child);
      else await waitFor(() => output().includes('"service ready"') || child.exitCode !== null, 60_000);
      expect(child.exitCode, output()).toBeNull();
    }
    for (const [service, { env, out }] of started) {
      const check = await run(process.execPath, healthcheck.slice(1), { cwd: out, env }).catch((e: { stdout: string }) => e);
      expect(check.stdout, `${service} HEALTHCHECK`).toMatch(/^healthy/);
      const scrape = await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`);
      expect(scrape.status).toBe(200);
      const text = await scrape.text();
      expect(text).toContain(`service_name="litrev-${service}"`);
      expect(text).toMatch(/^nodejs_eventloop_utilization/m);
    }

    const base = `http://127.0.0.1:${port}`;
    const papers = [1, 2, 3].map((i) => ({ id: `p${i}`, title: `Reminders for prescribers ${i}`, abstract: "A randomised trial." }));
    const created = await http(base, "POST", "/v1/screening/jobs", { papers, criteria: [{ name: "Population", type: "include", value: "Physicians" }], repetitions: 1, mock: true });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const final = await waitFor(async () => {
      const res = await http(base, "GET", `/v1/screening/jobs/${created.body.job_id}`);
      return ["completed", "failed"].includes(res.body.status) ? res.body : null;
    }, 60_000, 100);
    expect(final.status, JSON.stringify(final).slice(0, 500)).toBe("completed");
    // A body of 1 MB or more is parsed by the gateway's thread, which the image must start without tsx.
    const abstract = "A randomised trial of reminders in primary care. ".repeat(60);
    const large = Array.from({ length: 400 }, (_, i) => ({ id: `large-${i}`, title: `Reminders ${i}`, abstract }));
    expect(JSON.stringify(large).length).toBeGreaterThan(OFF_LOOP_MIN_BYTES);
    const createdLarge = await http(base, "POST", "/v1/screening/jobs", { papers: large, criteria: [{ name: "Population", type: "include", value: "Physicians" }], repetitions: 1, mock: true });
    expect(createdLarge.status, JSON.stringify(createdLarge.body)).toBe(200);
    // The console's reference import, written by the build (the image has no esbuild to make it).
    const bundle = await fetch(`${base}/console/references.js`);
    expect(bundle.status).toBe(200);
    expect(await bundle.text()).toMatch(/importReferences/);

    for (const [service, { child, output }] of started) {
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
      child.kill("SIGTERM");
      expect(await exited, `${service}: ${output().slice(-2000)}`).toBe(0);
    }
  }, 180_000);
});
