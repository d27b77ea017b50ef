export * from "./env";
export * from "./exit-codes";
export * from "./service";
export * from "./shutdown";
export * from "./service-version";
