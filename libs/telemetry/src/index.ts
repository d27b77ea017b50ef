export * from "./logger";
export { stopTelemetry } from "./sdk";
