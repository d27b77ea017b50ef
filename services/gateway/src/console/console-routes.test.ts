import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_SERVICES, jobKind } from "@litrev/contracts";
import { loadConsoleFiles } from "./console-routes";
import { offlineLink, testGateway } from "../testing";

const KEY = "console-test-key";
describe("the console's files", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testGateway(offlineLink(), { API_KEY: KEY });
  });
  afterAll(() => app?.close());

  it("serves the page and its assets without a key, with a policy that allows nothing from elsewhere", async () => {
    for (const url of ["/console", "/console/"]) {
      const page = await app.inject({ method: "GET", url });
      expect(page.statusCode, url).toBe(200);
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(page.body).toContain('<script type="module" src="/console/console.js">');
      expect(page.headers["content-security-policy"]).toMatch(/default-src 'none'.*script-src 'self'.*connect-src 'self'/);
      expect(page.headers["x-content-type-options"]).toBe("nosniff");
    }
    const script = await app.inject({ method: "GET", url: "/console/console.js" });
    expect(script.statusCode).toBe(200);
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect((await app.inject({ method: "GET", url: "/console/console.css" })).headers["content-type"]).toBe("text/css; charset=utf-8");
    // Nothing in the page refers to another origin.
    expect(`${(await app.inject({ method: "GET", url: "/console" })).body}${script.body}`).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
  });

  it("serves the job kinds from the registry as kinds.js, without a key (the console writes no list of them)", async () => {
    const res = await app.inject({ method: "GET", url: "/console/kinds.js" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(res.headers["content-security-policy"]).toMatch(/default-src 'none'/);
    const kinds = JSON.parse(/^export const KINDS = (.*);\n$/.exec(res.body)?.[1] ?? "null") as unknown;
    expect(kinds).toEqual(JOB_SERVICES.map((name) => ({ name, title: expect.any(String), noun: jobKind(name).report.noun })));
    expect(kinds).toContainEqual({ name: "indexer", title: "Extraction", noun: "records" });
  });

  it("serves only the files it read at start-up: no path leaves the folder", async () => {
    for (const url of ["/console/nope.js", "/console/..%2f..%2fpackage.json", "/console/%2e%2e%2fsrc%2fapp.ts", "/console/console-routes.ts"]) {
      const res = await app.inject({ method: "GET", url, headers: { "x-api-key": KEY } });
      expect(res.statusCode, url).toBe(404);
    }
    const outside = await app.inject({ method: "GET", url: "/console/../package.json" });
    expect(outside.statusCode).not.toBe(200);
  });

  it("keeps the data behind the key: the page's API calls without it are refused", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/screening/jobs" });
    expect(res.statusCode).toBe(401);
    expect((await app.inject({ method: "GET", url: "/v1/console" })).statusCode).toBe(401);
  });

  it("answers /favicon.ico without a key", async () => {
    for (const url of ["/favicon.ico"]) {
      const res = await app.inject({ method: "GET", url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"]).toBe("image/svg+xml");
    }
  });

  it("serves the reference import bundled for the browser, without a key", async () => {
    const res = await app.inject({ method: "GET", url: "/console/references.js" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    // An ES module the page imports: the library's functions, and no Node built-in left in it.
    expect(res.body).toMatch(/export\s*\{[^}]*importReferences/);
    expect(res.body).not.toMatch(/from\s*"(node:)?(fs|path|stream|http)"/);
  });

  it("reads only known kinds of file, within its bounds", () => {
    const dir = mkdtempSync(join(tmpdir(), "litrev-console-"));
    try {
      writeFileSync(join(dir, "index.html"), "<p>hi</p>");
      writeFileSync(join(dir, "secret.env"), "KEY=1");
      writeFileSync(join(dir, "huge.js"), Buffer.alloc((1 << 20) + 1));
      symlinkSync("/etc", join(dir, "etc.css"));
      expect([...loadConsoleFiles(dir).keys()]).toEqual(["index.html"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
