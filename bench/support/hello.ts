import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ROOT } from "../../scripts/lib/launch";

/**
 * The baseline every HTTP benchmark compares against: a bare fastify route (no auth, validation
 * or telemetry) in its own process, like the gateway. Resolves to its base URL.
 */
export async function startHelloServer(): Promise<{ url: string; child: ChildProcess }> {
  const code = `
    import Fastify from "fastify";
    const app = Fastify({ logger: false });
    app.get("/hello", async () => ({ hello: "world" }));
    await app.listen({ port: 0, host: "127.0.0.1" });
    console.log(JSON.stringify({ port: app.server.address().port }));
    process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
  `;
  // fastify resolves from the gateway package (pnpm keeps dependencies per package).
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { cwd: join(ROOT, "services/gateway"), stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await once(createInterface({ input: child.stdout! }), "line")) as [string];
  const { port } = JSON.parse(line) as { port: number };
  return { url: `http://127.0.0.1:${port}`, child };
}
