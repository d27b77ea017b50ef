import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsLink } from "@litrev/messaging";
import { openJobInfra, readArtifactHead, type JobInfra } from "../../libs/jobs/src";
import { startStack, TEST_API_KEY, waitFor, type Stack } from "../support/stack";
import { CRITERIA, screeningPapers } from "./screening-fixtures";

/**
 * Every read of a finished job is served from its artifact by any gateway, without the owning
 * service: the service is paused (SIGSTOP) after the job completes and before anyone reads it, and
 * the poll, both exports, the report (Markdown and JSON), the validation route and the event
 * stream's end event answer from the second gateway, byte-identical to the same reads with the
 * service running. The job's results span several artifact chunks.
 */

const PAPERS = 4_000;
let stack: Stack;
let link: NatsLink;
let infra: JobInfra;

beforeAll(async () => {
  stack = await startStack({ services: { screening: 1 }, gateways: 2 });
  link = new NatsLink({ servers: stack.natsUrl, name: "e2e-finished-artifact" });
  infra = await openJobInfra(await link.ready(), "screening");
}, 90_000);
afterAll(async () => {
  await link?.close();
  await stack?.stop();
});

interface Answer {
  status: number;
  type: string | null;
  bytes: number;
  sha: string;
}

/** Every read of a finished job, as a client receives it (status, content type and the body's digest). */
async function readAll(baseUrl: string, jobId: string, labels: unknown): Promise<Record<string, Answer>> {
  const job = `${baseUrl}/v1/screening/jobs/${jobId}`;
  const auth = { "x-api-key": TEST_API_KEY };
  const reads: Record<string, () => Promise<Response>> = {
    poll: () => fetch(job, { headers: auth }),
    csv: () => fetch(`${job}/export?format=csv`, { headers: auth }),
    jsonl: () => fetch(`${job}/export?format=jsonl`, { headers: auth }),
    report: () => fetch(`${job}/report`, { headers: auth }),
    reportJson: () => fetch(`${job}/report?format=json`, { headers: auth }),
    validation: () => fetch(`${job}/validation`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ labels }) }),
    events: () => fetch(`${job}/events`, { headers: auth }),
  };
  const answers: Record<string, Answer> = {};
  for (const [name, read] of Object.entries(reads)) {
    const response = await read();
    const body = Buffer.from(await response.arrayBuffer());
    answers[name] = { status: response.status, type: response.headers.get("content-type"), bytes: body.length, sha: createHash("sha256").update(body).digest("hex") };
  }
  return answers;
}

describe("a finished job read from its artifact", { timeout: 240_000 }, () => {
  it("answers every read from a second gateway with the owning service paused, byte-identical to the reads without the pause", async () => {
    const created = await stack.http("POST", "/v1/screening/jobs", { papers: screeningPapers(PAPERS), criteria: CRITERIA, mock: true });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    const jobId = created.body.job_id as string;
    // Waited for without a read through a gateway: the first read happens with the service paused.
    const final = await waitFor(async () => {
      const state = (await infra.registry.get(jobId))?.state;
      return state && state.status !== "pending" && state.status !== "running" ? state : null;
    }, 150_000, 250);
    expect(final.status, final.error ?? "").toBe("completed");
    const head = await readArtifactHead(infra.data, jobId);
    expect(head?.items.chunks).toBeGreaterThan(1);

    const labels = Array.from({ length: 40 }, (_, i) => ({ id: `p${i + 1}`, included: i % 3 === 0 }));
    const service = stack.processes.find((p) => p.name === "screening")!;
    service.child.kill("SIGSTOP");
    let paused: Record<string, Answer>;
    try {
      paused = await readAll(stack.gatewayUrls[1]!, jobId, labels);
    } finally {
      service.child.kill("SIGCONT");
    }
    const running = await readAll(stack.gatewayUrls[0]!, jobId, labels);

    for (const [name, answer] of Object.entries(paused)) {
      expect(answer.status, name).toBe(200);
      expect(answer, name).toEqual(running[name]);
    }
    expect(paused.poll!.bytes).toBeGreaterThan(1024 * 1024);
    expect(paused.events!.type).toContain("text/event-stream");
  });
});
