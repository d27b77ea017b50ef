import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, type TestContext } from "vitest";
import { ROOT } from "../../scripts/lib/launch";
import { startStack, type Stack, type StackOptions } from "./stack";

/** Where the browser tests save their screenshots. */
export const CONSOLE_ARTIFACTS = join(ROOT, "test-artifacts", "console");

/** Flags for a closed network: without the background-networking ones Chromium keeps trying to reach the outside. */
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

/** Debian's Chromium (scripts/ensure-chromium.sh installs it when missing), or why there is none. */
function findChromium(): { path: string } | { reason: string } {
  const result = spawnSync("bash", [join(ROOT, "scripts/ensure-chromium.sh")], { encoding: "utf8", timeout: 900_000 });
  const path = result.stdout.trim().split("\n").at(-1) ?? "";
  if (result.status === 0 && path) return { path };
  return { reason: result.stderr.trim().split("\n").at(-1) || `scripts/ensure-chromium.sh exited ${result.status}` };
}

export interface ConsoleSuite {
  stack: Stack;
  browser: Browser;
  page: Page;
  /** Errors thrown in the page. */
  pageErrors: string[];
  /** Requests that left the stack (the console must work on a closed network). */
  outside: string[];
}

/**
 * The set-up every browser suite shares, registered as the suite's hooks: Debian's Chromium, a
 * stack started with `stack` (a function when it needs something started first, such as a fake
 * provider), and one page in a new empty profile (1280×900, no motion, downloads kept) recording
 * the page's errors and every request to anywhere but the stack or `localSchemes`; all closed after
 * the suite. Returns `use(ctx)`, which each test calls first: the set-up, or, without Chromium,
 * the test is skipped with the reason (printed once; a skip is never counted as a pass).
 */
export function consoleSuite(stack: StackOptions | (() => Promise<StackOptions>), localSchemes: readonly string[] = ["data:"]): (ctx: TestContext) => ConsoleSuite {
  let suite: ConsoleSuite | undefined;
  let started: Stack | undefined;
  let browser: Browser | undefined;
  let missing = "";
  beforeAll(async () => {
    const found = findChromium();
    if ("reason" in found) {
      missing = found.reason;
      console.warn(`[browser suite] skipped: Chromium is not available: ${missing}`);
      return;
    }
    mkdirSync(CONSOLE_ARTIFACTS, { recursive: true });
    started = await startStack(typeof stack === "function" ? await stack() : stack);
    browser = await chromium.launch({ executablePath: found.path, headless: true, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: "reduce", acceptDownloads: true });
    suite = { stack: started, browser, page: await context.newPage(), pageErrors: [], outside: [] };
    const { page, pageErrors, outside } = suite;
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("request", (request) => {
      const url = request.url();
      if (!url.startsWith(started!.baseUrl) && !localSchemes.some((scheme) => url.startsWith(scheme))) outside.push(url);
    });
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    await started?.stop();
  });
  return (ctx) => suite ?? ctx.skip(`Chromium is not available: ${missing}`);
}
