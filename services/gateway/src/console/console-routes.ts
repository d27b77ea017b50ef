import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join } from "node:path";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { JOB_SERVICES, jobKind } from "@litrev/contracts";
import { buildReferencesBundle, prebuiltReferencesBundle } from "./references-bundle";

/**
 * Where the console's files live: plain HTML, CSS and JavaScript, served as they are (no build step),
 * beside the gateway's package.json. Found through the package's own name, so that the same code
 * finds them from src/ under tsx and from the compiled dist/ in the image (scripts/lib/build.ts).
 */
const CONSOLE_DIR = join(dirname(createRequire(import.meta.url).resolve("@litrev/gateway/package.json")), "console");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};
/** Bounds on what is read into memory at start-up. */
const MAX_FILES = 32;
const MAX_FILE_BYTES = 1 << 20;

/**
 * Everything the page may load comes from this gateway, and its scripts may talk to this gateway
 * only: no inline script, no third-party asset, no framing.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

interface StaticFile {
  body: Buffer;
  type: string;
}

/** The console's files, read once: only names listed here are ever served, so no path can leave the folder. */
export function loadConsoleFiles(dir = CONSOLE_DIR): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(dir).sort()) {
    const type = TYPES[extname(name)];
    if (!type || !/^[\w.-]+$/.test(name)) continue;
    const path = join(dir, name);
    const stat = statSync(path);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) continue;
    if (files.size >= MAX_FILES) break;
    files.set(name, { body: readFileSync(path), type });
  }
  return files;
}

/**
 * The console at `/console` (docs/console.md). The page and its assets are public — they hold no
 * data; the page asks for the service key and sends it with every API call it makes, so every
 * piece of data stays behind the key.
 */
export function consoleRoutes(dir = CONSOLE_DIR): FastifyPluginAsync {
  return async (app) => {
    const files = loadConsoleFiles(dir);
    const send = (reply: FastifyReply, name: string) => {
      const file = files.get(name);
      if (!file) return reply.status(404).send({ detail: "Not Found" });
      return reply.headers(SECURITY_HEADERS).type(file.type).send(file.body);
    };
    // Built once, on the first request for it (only a reviewer importing files needs it).
    let bundle: Promise<Buffer> | undefined;
    app.get("/console/references.js", { schema: { hide: true } }, async (request, reply) => {
      bundle ??= Promise.resolve(prebuiltReferencesBundle()).then(async (built) => built ?? Buffer.from(await buildReferencesBundle()));
      try {
        return reply.headers(SECURITY_HEADERS).type(TYPES[".js"]!).send(await bundle);
      } catch (error) {
        bundle = undefined;
        request.log.error({ err: error }, "the console's reference import could not be bundled");
        return reply.status(503).send({ detail: "The reference import is not available on this gateway" });
      }
    });
    // The job kinds, from the registry (the console writes no list of them): name, title, item noun.
    app.get("/console/kinds.js", { schema: { hide: true } }, (_request, reply) => reply.headers(SECURITY_HEADERS).type(TYPES[".js"]!).send(kindsModule()));
    // Browsers ask for it on every page; it holds no data.
    app.get("/favicon.ico", { schema: { hide: true } }, (_request, reply) => send(reply, "favicon.svg"));
    app.get("/console", { schema: { hide: true } }, (_request, reply) => send(reply, "index.html"));
    app.get("/console/", { schema: { hide: true } }, (_request, reply) => send(reply, "index.html"));
    app.get("/console/:file", { schema: { hide: true } }, (request, reply) => send(reply, (request.params as { file: string }).file));
  };
}

/** The console's `kinds.js`: each declared job kind's name, title (the first word of its job noun) and item noun. */
export function kindsModule(): string {
  const kinds = JOB_SERVICES.map((name) => {
    const { jobNoun, report } = jobKind(name);
    const word = jobNoun.split(" ")[0] ?? name;
    return { name, title: word.charAt(0).toUpperCase() + word.slice(1), noun: report.noun };
  });
  return `export const KINDS = ${JSON.stringify(kinds)};\n`;
}
