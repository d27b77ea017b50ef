import { describe, expect, it } from "vitest";
import { serviceVersion } from "./service-version";

describe("serviceVersion", () => {
  it("names the package version and the commit from SERVICE_COMMIT", () => {
    expect(serviceVersion("0123456789ABCDEF0123456789abcdef01234567")).toEqual({ version: "0.1.0", commit: "0123456789abcdef0123456789abcdef01234567" });
  });

  it("falls back to git (or null) for a missing or malformed value, and never throws", () => {
    const { version, commit } = serviceVersion("not a commit; rm -rf /");
    expect(version).toBe("0.1.0");
    expect(commit === null || /^[0-9a-f]{40}$/.test(commit)).toBe(true);
  });
});
