import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../support/stack";

describe("smoke: gateway and criteria over a real nats-server", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it("answers a mock analyze-question", async () => {
    const res = await stack.http("POST", "/v1/criteria/analyze-question", { research_question: "Does X help Y?", mock: true });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("could_improve");
  });
});
