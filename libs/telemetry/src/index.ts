export * from "./logger";
export * from "./metrics";
export * from "./sampling";
export { stopTelemetry } from "./sdk";
