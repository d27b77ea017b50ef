import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider } from "@litrev/llm/testing";
import { http, startStack, waitFor, type RunningProcess, type Stack } from "../support/stack";
import { startGateway } from "../resilience/support";
import { CRITERIA, screeningPapers, screeningResponder } from "../e2e/screening-fixtures";

/**
 * Rotating JOB_KEY_SECRET with old and new side by side (docs/security.md): processes that list
 * both open tokens sealed under either, the first one listed seals, and once the old secret is
 * dropped its tokens are refused. Gateways and services run with different secret lists here, as
 * they do in the middle of a rolling rotation.
 */

const OLD = randomBytes(24).toString("base64url");
const NEW = randomBytes(24).toString("base64url");
const CLIENT_KEY = "sk-rotation-client-0123456789";
const question = { research_question: "Do audit and feedback change antibiotic prescribing?" };

describe("rotating JOB_KEY_SECRET (real stack)", () => {
  let provider: FakeProvider;
  let stack: Stack;
  /** Gateways by the secrets they seal with. */
  let oldGateway: string;
  let newGateway: string;
  let strangerGateway: string;

  const usedClientKey = () => provider.chatRequests().filter((r) => r.headers.authorization === `Bearer ${CLIENT_KEY}`).length;
  const ask = (baseUrl: string) => http(baseUrl, "POST", "/v1/criteria/analyze-question", question, { headers: { "x-llm-api-key": CLIENT_KEY } });

  beforeAll(async () => {
    provider = await startFakeProvider({ validKeys: [CLIENT_KEY, "sk-rotation-server"], respond: screeningResponder() });
    // The stack's own gateway still runs with the old single secret (key id k0), as before the rotation.
    stack = await startStack({
      services: {},
      env: { JOB_KEY_SECRET: OLD, OPENAI_API_KEY: "sk-rotation-server", OPENAI_BASE_URL: provider.url, LLM_MAX_ATTEMPTS: "2" },
    });
    oldGateway = stack.baseUrl;
    // Step 2 of the rotation: the new secret seals, the old one still opens.
    newGateway = (await startGateway(stack, { JOB_KEY_SECRET: "", JOB_KEY_SECRETS: `k1:${NEW},k0:${OLD}` })).url;
    strangerGateway = (await startGateway(stack, { JOB_KEY_SECRET: "", JOB_KEY_SECRETS: `k9:${randomBytes(24).toString("base64url")}` })).url;
  });
  afterAll(async () => {
    await stack?.stop();
    await provider?.close();
  });

  it("opens tokens sealed under the old and the new secret while both are listed, and refuses an unknown key id", async () => {
    const criteria = await stack.startService("criteria", { JOB_KEY_SECRET: "", JOB_KEY_SECRETS: `k1:${NEW},k0:${OLD}` });
    for (const gateway of [oldGateway, newGateway]) {
      const before = usedClientKey();
      const res = await ask(gateway);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(usedClientKey()).toBe(before + 1);
    }
    const stranger = await ask(strangerGateway);
    expect(stranger.status).toBe(401);
    expect(stranger.body.detail).toMatchObject({ error_code: "auth", retryable: false });
    expect(stranger.body.detail.message).toMatch(/key id k9/);
    await stack.stopProcess(criteria);
  });

  it("runs a job queued with a token under the old secret on a worker that lists both", async () => {
    const screening = await stack.startService("screening", { JOB_KEY_SECRET: "", JOB_KEY_SECRETS: `k1:${NEW},k0:${OLD}` });
    for (const gateway of [oldGateway, newGateway]) {
      const before = usedClientKey();
      const created = await http(gateway, "POST", "/v1/screening/jobs", { papers: screeningPapers(2), criteria: CRITERIA, repetitions: 1 }, { headers: { "x-llm-api-key": CLIENT_KEY } });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const final = await waitFor(async () => {
        const res = await http(gateway, "GET", `/v1/screening/jobs/${created.body.job_id}`);
        return res.body?.status === "completed" || res.body?.status === "failed" ? res.body : null;
      }, 90_000);
      expect(final.status, JSON.stringify(final).slice(0, 300)).toBe("completed");
      expect(usedClientKey()).toBeGreaterThan(before);
    }
    await stack.stopProcess(screening);
  });

  it("refuses the old secret's tokens once it is dropped (step 3), and keeps serving the new ones", async () => {
    const criteria: RunningProcess = await stack.startService("criteria", { JOB_KEY_SECRET: "", JOB_KEY_SECRETS: `k1:${NEW}` });
    expect((await ask(newGateway)).status).toBe(200);
    const stale = await ask(oldGateway);
    expect(stale.status).toBe(401);
    expect(stale.body.detail.message).toMatch(/key id k0/);
    expect(JSON.stringify(stale.body)).not.toContain(CLIENT_KEY);
    await stack.stopProcess(criteria);
    const logs = stack.processes.map((p) => p.output()).join("\n");
    for (const secret of [OLD, NEW, CLIENT_KEY]) expect(logs).not.toContain(secret);
  });

  it("refuses to start with secrets that contradict each other, naming the variable", async () => {
    const refused = await stack.startService("criteria", { JOB_KEY_SECRET: OLD, JOB_KEY_SECRETS: `k1:${NEW}` }).then(
      () => null,
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/JOB_KEY_SECRETS/);
    expect(refused).not.toContain(NEW);
  });
});
