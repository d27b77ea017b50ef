export * from "./binomial";
export * from "./certificate";
export * from "./error-rates";
export * from "./metrics";
export * from "./randomness";
export * from "./sequence";
export * from "./validation";
export * from "./sample";
