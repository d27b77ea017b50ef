// Flat config: ESLint's and typescript-eslint's recommended rules for the whole workspace.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["**/node_modules/", ".toolchain/", ".data/", "coverage/", "test-artifacts/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      // `_name` marks a deliberately unused binding (a key omitted by destructuring, a positional argument).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
    },
  },
  {
    // JavaScript under deploy/ is mongosh scripts, which get these globals from the shell.
    files: ["deploy/**/*.js"],
    languageOptions: {
      sourceType: "script",
      globals: { rs: "readonly", db: "readonly", print: "readonly", sleep: "readonly", connect: "readonly", process: "readonly" },
    },
  },
  {
    // The gateway's console: a browser module served as it is (services/gateway/console).
    files: ["services/gateway/console/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: Object.fromEntries(
        ["window", "document", "location", "sessionStorage", "fetch", "setTimeout", "clearTimeout", "Node", "TextDecoderStream", "AbortController", "URL"].map(
          (name) => [name, "readonly"],
        ),
      ),
    },
  },
);
