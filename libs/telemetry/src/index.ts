export * from "./logger";
export * from "./metrics";
export { stopTelemetry } from "./sdk";
