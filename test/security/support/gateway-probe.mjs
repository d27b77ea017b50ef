// Loaded into a gateway by test/security/fair-owners.test.ts (NODE_OPTIONS=--import, when
// FAIR_OWNERS_PROBE_DIR is set): every 250 ms it notes process.memoryUsage(), the event loop's
// delay since the last note (perf_hooks histogram) and garbage collection's pauses since then (the
// longest and their sum, from "gc" performance entries), and rewrites <dir>/<pid>.json with the
// series, so the test can tell heap from buffers and see the gateway's loop blocked (a worker
// thread, which NODE_OPTIONS reaches too, writes <pid>-thread<id>.json). Plain JS: it loads before tsx.
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import process from "node:process";
import { setInterval } from "node:timers";
import { isMainThread, threadId } from "node:worker_threads";

const dir = process.env.FAIR_OWNERS_PROBE_DIR;
if (dir) {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const series = [];
  // Garbage collection's pauses since the last note: the longest and their sum.
  let gcMaxMs = 0;
  let gcMs = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMaxMs = Math.max(gcMaxMs, entry.duration);
      gcMs += entry.duration;
    }
  }).observe({ entryTypes: ["gc"] });
  const mb = (bytes) => Math.round(bytes / 1048576);
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    series.push({ t: Date.now(), rss: mb(m.rss), heapUsed: mb(m.heapUsed), heapTotal: mb(m.heapTotal), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), loopMaxMs: Math.round(loop.max / 1e6), loopP99Ms: Math.round(loop.percentile(99) / 1e6), gcMaxMs: Math.round(gcMaxMs), gcMs: Math.round(gcMs) });
    loop.reset();
    gcMaxMs = 0;
    gcMs = 0;
    if (series.length > 2400) series.shift(); // 10 minutes: bounded
    if (series.length % 4 === 0) {
      // Written aside, then renamed: the test never reads a half-written file.
      const file = join(dir, `${process.pid}${isMainThread ? "" : `-thread${threadId}`}.json`);
      writeFileSync(`${file}.tmp`, JSON.stringify(series));
      renameSync(`${file}.tmp`, file);
    }
  }, 250);
  timer.unref();
}
