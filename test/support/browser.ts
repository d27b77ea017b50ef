import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { ROOT } from "../../scripts/lib/launch";

/** Where the browser tests save their screenshots. */
export const CONSOLE_ARTIFACTS = join(ROOT, "test-artifacts", "console");

/** Flags for a closed network: without the background-networking ones Chromium keeps trying to reach the outside. */
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

/** Debian's Chromium (scripts/ensure-chromium.sh installs it when missing), or why there is none. */
export function findChromium(): { path: string } | { reason: string } {
  const result = spawnSync("bash", [join(ROOT, "scripts/ensure-chromium.sh")], { encoding: "utf8", timeout: 900_000 });
  const path = result.stdout.trim().split("\n").at(-1) ?? "";
  if (result.status === 0 && path) return { path };
  return { reason: result.stderr.trim().split("\n").at(-1) || `scripts/ensure-chromium.sh exited ${result.status}` };
}

export interface ConsolePage {
  browser: Browser;
  page: Page;
  /** Errors thrown in the page. */
  pageErrors: string[];
  /** Requests that left the stack (the console must work on a closed network). */
  outside: string[];
}

/**
 * Chromium in a new empty profile (1280×900, no motion, downloads kept) with one page, recording
 * the page's errors and every request to anywhere but `baseUrl` or the given local schemes.
 */
export async function openConsolePage(chromiumPath: string, baseUrl: string, localSchemes: readonly string[] = ["data:"]): Promise<ConsolePage> {
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: "reduce", acceptDownloads: true });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  const outside: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("request", (request) => {
    const url = request.url();
    if (!url.startsWith(baseUrl) && !localSchemes.some((scheme) => url.startsWith(scheme))) outside.push(url);
  });
  return { browser, page, pageErrors, outside };
}
