export * from "./env";
export * from "./service";
export * from "./shutdown";
export * from "./service-version";
