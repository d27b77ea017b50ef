import { describe, expect, it } from "vitest";
import { thresholdOf } from "./validation-route";

describe("the validation route's reading of the job", () => {
  // Audit "Why 5": a fractional threshold was reported as 1 (the integer fallback).
  it("keeps a fractional threshold as the job recorded it, and the spec's default without one", () => {
    expect(thresholdOf({ threshold: 2.5 })).toBe(2.5);
    expect(thresholdOf({ threshold: 3 })).toBe(3);
    expect(thresholdOf({})).toBe(1);
    expect(thresholdOf({ threshold: "2" })).toBe(1);
  });
});
