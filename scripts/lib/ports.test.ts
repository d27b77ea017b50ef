import { once } from "node:events";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "./launch";
import { portFromEnv, portProblem } from "./ports";

describe("portProblem", () => {
  it("is undefined for a free port and names a taken one", async () => {
    const port = await freePort();
    expect(await portProblem(port, "127.0.0.1")).toBeUndefined();
    const server = createServer().listen(port, "127.0.0.1");
    await once(server, "listening");
    try {
      expect(await portProblem(port, "127.0.0.1")).toBe(`port ${port} on 127.0.0.1 is already in use`);
      // A listener on loopback also blocks every interface.
      expect(await portProblem(port, "0.0.0.0")).toBe(`port ${port} on 0.0.0.0 is already in use`);
    } finally {
      server.close();
    }
    // The probe itself leaves the port free.
    expect(await portProblem(port, "127.0.0.1")).toBeUndefined();
  });
});

describe("portFromEnv", () => {
  it("defaults when unset or empty, and refuses what is not a port", () => {
    expect(portFromEnv("PORT", undefined, 8000)).toBe(8000);
    expect(portFromEnv("PORT", "", 8000)).toBe(8000);
    expect(portFromEnv("PORT", "8080", 8000)).toBe(8080);
    expect(portFromEnv("PORT", "80a", 8000)).toBe('PORT must be a port number from 1 to 65535, got "80a"');
    expect(portFromEnv("NATS_PORT", "70000", 4222)).toMatch(/^NATS_PORT must be/);
  });
});
