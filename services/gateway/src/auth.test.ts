import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { createKeyring, presentedKey, providerKeyOf } from "./auth";

const request = (headers: Record<string, string>) => ({ headers }) as unknown as FastifyRequest;
const createKeyVerifier = (keys: readonly string[]) => {
  const identify = createKeyring(keys.map((key) => ({ key, owner: "default", role: "admin" as const })));
  return (presented: string | undefined) => identify(presented) !== null;
};

describe("createKeyring", () => {
  const verify = createKeyVerifier(["first-key-123", "second-key-456"]);

  it("accepts each configured key", () => {
    expect(verify("first-key-123")).toBe(true);
    expect(verify("second-key-456")).toBe(true);
  });

  it("rejects anything else: absent, empty, a prefix, an extension, another case", () => {
    for (const presented of [undefined, "", "first-key-12", "first-key-1234", "FIRST-KEY-123", "second-key-456 "]) {
      expect(verify(presented), String(presented)).toBe(false);
    }
  });

  it("accepts nothing when no key is configured", () => {
    expect(createKeyVerifier([])("anything")).toBe(false);
  });
});

describe("presentedKey", () => {
  it("reads X-API-Key", () => {
    expect(presentedKey(request({ "x-api-key": "k1" }))).toBe("k1");
  });

  it("reads Authorization: Bearer, case-insensitively and trimmed", () => {
    expect(presentedKey(request({ authorization: "Bearer k2" }))).toBe("k2");
    expect(presentedKey(request({ authorization: "bearer   k3  " }))).toBe("k3");
  });

  it("ignores other authorization schemes and empty values", () => {
    expect(presentedKey(request({ authorization: "Basic dXNlcjpwYXNz" }))).toBeUndefined();
    expect(presentedKey(request({ authorization: "Bearer " }))).toBeUndefined();
    expect(presentedKey(request({ "x-api-key": "" }))).toBeUndefined();
    expect(presentedKey(request({}))).toBeUndefined();
  });

  it("prefers X-API-Key when both are sent", () => {
    expect(presentedKey(request({ "x-api-key": "k1", authorization: "Bearer k2" }))).toBe("k1");
  });

  it("falls back to the bearer token when X-API-Key is empty", () => {
    expect(presentedKey(request({ "x-api-key": "", authorization: "Bearer k2" }))).toBe("k2");
  });
});

describe("providerKeyOf", () => {
  it("reads X-LLM-API-Key and, as the original system's clients send it, X-OpenAI-API-Key", () => {
    expect(providerKeyOf(request({ "x-llm-api-key": " sk-a " }))).toBe("sk-a");
    expect(providerKeyOf(request({ "x-openai-api-key": "sk-b" }))).toBe("sk-b");
    expect(providerKeyOf(request({ "x-llm-api-key": "sk-c", "x-openai-api-key": "sk-c" }))).toBe("sk-c");
    expect(providerKeyOf(request({ "x-openai-api-key": "  " }))).toBeUndefined();
    expect(providerKeyOf(request({}))).toBeUndefined();
  });

  it("refuses two different keys with a 400 naming both headers", () => {
    expect(() => providerKeyOf(request({ "x-llm-api-key": "sk-a", "x-openai-api-key": "sk-b" }))).toThrow(
      expect.objectContaining({ category: "validation", simple: true, message: expect.stringMatching(/X-LLM-API-Key.*X-OpenAI-API-Key/) }),
    );
  });
});
