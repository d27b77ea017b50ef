import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEventStream } from "../support/sse";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * A finished job's poll body is written once, at its first terminal poll, and from then on any
 * gateway replica serves it (polls and the event stream's end event) without asking the service:
 * with every service process stopped, a second gateway that never saw the job still answers its
 * polls, byte for byte, for a small body (one part) and a large one (streamed in parts). Runs on a
 * locked-down nats-server, so the gateway reads the finished body with its own permissions.
 */

const BOB = "bob-finished-polls-key-0123456789";
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ services: { screening: 1 }, gateways: 2, lockedNats: true, env: { API_KEYS: `bob:use:${BOB}` } });
}, 90_000);
afterAll(async () => stack?.stop());

/** The raw bytes of a poll, as a client receives them. */
async function rawPoll(baseUrl: string, jobId: string, key = TEST_API_KEY): Promise<{ status: number; text: string }> {
  const response = await fetch(`${baseUrl}/v1/screening/jobs/${jobId}`, { headers: { "x-api-key": key } });
  return { status: response.status, text: await response.text() };
}

async function finishedJob(papers: number): Promise<{ jobId: string; text: string }> {
  const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(papers), criteria: CRITERIA, mock: true });
  expect(created.status).toBe(200);
  const jobId = created.body.job_id as string;
  // The first terminal poll goes to the service (it releases the live entry and writes the finished body).
  const text = await waitFor(async () => {
    const poll = await rawPoll(stack.baseUrl, jobId);
    return poll.status === 200 && (JSON.parse(poll.text) as { status: string }).status === "completed" ? poll.text : undefined;
  }, 60_000, 200);
  return { jobId, text };
}

describe("finished jobs read without the service", { timeout: 120_000 }, () => {
  it("any gateway serves a finished job's polls and end event, byte-identical, with the service stopped", async () => {
    const small = await finishedJob(12);
    const large = await finishedJob(5_000);
    expect(Buffer.byteLength(large.text)).toBeGreaterThan(2 * 1024 * 1024); // several parts
    // A second poll on the first gateway: the same bytes.
    expect((await rawPoll(stack.baseUrl, small.jobId)).text).toBe(small.text);

    for (const service of stack.processes.filter((p) => p.name === "screening")) await stack.stopProcess(service, "SIGTERM");
    // Nobody answers the service's subjects now: a job the gateways have no finished body for is a 503.
    const unknown = await rawPoll(stack.gatewayUrls[1]!, "00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(503);

    const other = stack.gatewayUrls[1]!;
    for (const job of [small, large]) {
      const again = await Promise.all(Array.from({ length: 4 }, () => rawPoll(other, job.jobId)));
      for (const poll of again) {
        expect(poll.status).toBe(200);
        expect(poll.text === job.text).toBe(true);
      }
      // Another client's job is not found, from the finished body as from the service.
      const foreign = await rawPoll(other, job.jobId, BOB);
      expect(foreign.status).toBe(404);
      expect(JSON.parse(foreign.text)).toEqual({ detail: "Job not found" });
    }
    const stream = await readEventStream(`${other}/v1/screening/jobs/${small.jobId}/events`);
    expect(stream.events.at(-1)).toEqual({ event: "end", id: "end", data: small.text });
    const foreignStream = await fetch(`${other}/v1/screening/jobs/${small.jobId}/events`, { headers: { "x-api-key": BOB } });
    expect(foreignStream.status).toBe(404);
    await foreignStream.body?.cancel();
  });
});
