/**
 * The largest screening creation the gateway's default body limit admits (BODY_LIMIT_MB unset:
 * 50,000 papers, with criteria at their longest, as many as MAX_RESULTS_MCHARS lets such a job have,
 * and abstracts filling the rest, each with one character past U+00FF: the heap's worst case,
 * services/gateway/src/body-parser.ts), sent to
 * a gateway started as `npm start` starts it (its V8 heap cap, scripts/lib/launch.ts) with one
 * screening service: answered 200, the job admitted, and the gateway's peak RSS. Goal: 200 with
 * the heap cap. Twice: the second after the first's garbage. (A NODE_OPTIONS of your own that
 * sets --max-old-space-size wins: run with a large one for the uncapped figures.) Exits non-zero
 * when a creation is not answered 200.
 *
 *   nice -n 10 npm run bench -- largest-body
 */
import { readFileSync } from "node:fs";
import { bodyLimitBytes } from "../services/gateway/src/body-parser";
import { RequestLimits } from "@litrev/contracts";
import { GATEWAY_HEAP_MB } from "../scripts/lib/launch";
import { startStack } from "../test/support/stack";

const limit = bodyLimitBytes(RequestLimits.parse({}));
const l = RequestLimits.parse({});
// 60 criteria: 50,000 papers × 60 criteria is within the results a job may return (MAX_RESULTS_MCHARS).
const criteria = Array.from({ length: 60 }, (_, i) => ({ name: `Criterion ${i}`, type: i % 2 ? "exclude" : "include", value: "c".repeat(l.MAX_CRITERION_CHARS) }));
// Each abstract ends with an en dash, as real ones often hold one: V8 keeps a string with any
// character past U+00FF in two bytes a character, so such a body takes twice its size in the heap.
const skeleton = (abstractBytes: number) => ({
  papers: Array.from({ length: l.MAX_SCREENING_PAPERS }, (_, i) => ({ id: `p${i}`, title: `Paper ${i}`, abstract: abstractBytes > 0 ? `${"a".repeat(abstractBytes - 3)}–` : "" })),
  criteria,
  repetitions: 1,
  mock: true,
});
// Abstracts as long as the limit allows: the body within 64 KiB of it.
const fixed = Buffer.byteLength(JSON.stringify(skeleton(0)));
const body = JSON.stringify(skeleton(Math.floor((limit - fixed - 65_536) / l.MAX_SCREENING_PAPERS)));
const bodyBytes = Buffer.byteLength(body);
const stack = await startStack({ services: { screening: 1 } });
try {
  const pid = stack.processes.find((p) => p.name === "gateway")!.child.pid!;
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024)), 50);
  let failed = false;
  for (let attempt = 1; attempt <= 2; attempt++) {
    const started = performance.now();
    const res = await stack.http("POST", "/v1/screening/jobs", undefined, { rawBody: body });
    const ok = res.status === 200;
    failed ||= !ok;
    console.log(
      `largest creation ${attempt}: ${(bodyBytes / 1048576).toFixed(1)} MiB of ${(limit / 1048576).toFixed(0)} MiB (${l.MAX_SCREENING_PAPERS} papers, ${criteria.length} criteria), gateway heap cap ${GATEWAY_HEAP_MB} MB${process.env.NODE_OPTIONS ? ` then NODE_OPTIONS=${process.env.NODE_OPTIONS}` : ""}: ` +
        `${res.status} in ${((performance.now() - started) / 1000).toFixed(1)} s${ok ? "" : ` ${JSON.stringify(res.body).slice(0, 300)}`}; gateway's peak RSS so far ${peak.toFixed(0)} MB`,
    );
  }
  clearInterval(sampler);
  if (failed) process.exitCode = 1;
} finally {
  await stack.stop();
}
