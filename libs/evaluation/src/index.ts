export * from "./binomial";
export * from "./metrics";
export * from "./validation";
