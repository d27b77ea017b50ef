import { startStack, TEST_API_KEY } from "./test/support/stack";
import { readEventStream } from "./test/support/sse";
import { startFakeProvider } from "./libs/llm/src/testing/index";
const provider = await startFakeProvider({ mode: "hang" });
const stack = await startStack({ services: { screening: 1 }, env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: provider.url, LOG_LEVEL: "debug", MAX_EVENT_STREAMS: "2" } });
try {
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: [{ id: "1", title: "t", abstract: "a" }], criteria: [] });
  const url = `${stack.baseUrl}/v1/screening/jobs/${created.body.job_id}/events`;
  const open = () => { const c = new AbortController(); const events: unknown[] = []; const done = readEventStream(url, { onEvent: (e) => events.push(e), signal: c.signal, timeoutMs: 30_000 }); return { events, done, leave: () => c.abort() }; };
  const a = open(); const b = open();
  while (a.events.length === 0 || b.events.length === 0) await new Promise((r) => setTimeout(r, 50));
  const refused = await fetch(url, { headers: { "x-api-key": TEST_API_KEY } }); console.log("refused", refused.status, await refused.text());
  b.leave(); await b.done;
  await new Promise((r) => setTimeout(r, 300));
  const c = open();
  await new Promise((r) => setTimeout(r, 500));
  console.log("c events", c.events.length);
  const gw = stack.processes.find((p) => p.name === "gateway")!;
  const t = Date.now();
  gw.child.kill("SIGTERM");
  const [ra, rc] = await Promise.all([a.done, c.done]);
  console.log("closed by server", ra.closedByServer, rc.closedByServer, "after", Date.now() - t);
  await new Promise((res) => gw.child.once("exit", res));
  console.log("gateway exited", gw.child.exitCode, "after", Date.now() - t);
  console.log(gw.output().split("\n").filter((l) => /request completed|incoming|shut|timed|error/i.test(l)).map((l) => l.slice(0, 260)).join("\n").slice(-4000));
} finally { await stack.stop(); await provider.close(); }
