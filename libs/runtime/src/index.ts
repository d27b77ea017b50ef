export * from "./env";
export { EXIT_CONFIG } from "@litrev/telemetry/exit-codes";
export * from "./service";
export * from "./shutdown";
export * from "./service-version";
