import { NatsLink } from "../libs/messaging/src/index";
import { openJobInfra } from "../libs/jobs/src/index";
import { startStack, TEST_API_KEY, waitFor } from "../test/support/stack";
import { CRITERIA, screeningPapers } from "../test/e2e/screening-fixtures";

const stack = await startStack({ gateways: 1, services: { screening: 1 } });
const link = new NatsLink({ servers: stack.natsUrl, name: "probe" });
try {
  const infra = await openJobInfra(await link.ready(), "screening");
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(20000), criteria: CRITERIA, repetitions: 20, mock: true });
  const id = created.body.job_id;
  await waitFor(async () => ((await infra.registry.get(id))?.state.status === "completed" ? true : null), 150_000, 250);
  for (const n of [1, 1, 4, 10]) {
    const t0 = Date.now();
    const firstByte: number[] = [];
    await Promise.all(Array.from({ length: n }, async () => {
      const res = await fetch(`${stack.gatewayUrls[0]}/v1/screening/jobs/${id}`, { headers: { "x-api-key": TEST_API_KEY } });
      firstByte.push(Date.now() - t0);
      const text = await res.text();
      return text.length;
    }));
    console.log(`${n} polls: ${Date.now() - t0} ms; first bytes ${firstByte.join(",")}`);
  }
} finally {
  await link.close();
  await stack.stop();
}
