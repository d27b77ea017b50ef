const fs = require("node:fs");
const v8 = require("node:v8");
const vm = require("node:vm");
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");
const out = `/work/wt/scale/.tmp/live-${process.pid}.log`;
const t0 = Date.now();
setInterval(() => {
  gc();
  const m = process.memoryUsage();
  const mb = (n) => (n / 1048576).toFixed(0);
  fs.appendFileSync(out, `${((Date.now() - t0) / 1000).toFixed(1)} rss ${mb(m.rss)} live ${mb(m.heapUsed)} external ${mb(m.external)}\n`);
}, 3000).unref();
