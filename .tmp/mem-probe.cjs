const fs = require("node:fs");
const out = `/work/wt/scale/.tmp/mem-${process.pid}.log`;
const t0 = Date.now();
setInterval(() => {
  const m = process.memoryUsage();
  const mb = (n) => (n / 1048576).toFixed(0);
  fs.appendFileSync(out, `${((Date.now() - t0) / 1000).toFixed(1)} rss ${mb(m.rss)} heapTotal ${mb(m.heapTotal)} heapUsed ${mb(m.heapUsed)} external ${mb(m.external)} ab ${mb(m.arrayBuffers)}\n`);
}, 1000).unref();
